"""The data directory is created owner-only, and start-up warns when it is wider."""

from __future__ import annotations

import subprocess
import sys

from tests.servers import ROOT

_FRESH_SERVER = """
import os, stat
os.environ["DJANGO_SETTINGS_MODULE"] = "openprogram_site.settings"
import django
django.setup()
from django.conf import settings
from django.db import connection
with connection.cursor() as cursor:
    cursor.execute("CREATE TABLE t (x)")
    cursor.execute("INSERT INTO t VALUES (1)")
    home = settings.OPENPROGRAM_HOME
    for path in [home, home / "secret_key", home / "db.sqlite3",
                 home / "db.sqlite3-wal", home / "db.sqlite3-shm"]:
        print(path.name, oct(stat.S_IMODE(os.stat(path).st_mode)))
"""

_START_UP = """
import os
os.environ["DJANGO_SETTINGS_MODULE"] = "openprogram_site.settings"
import django
django.setup()
from openprogram_site.startup import start_background_services
start_background_services()
"""


def _run(code: str, home) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": "/usr/bin:/bin",
        "OPENPROGRAM_HOME": str(home),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )


def test_a_fresh_data_directory_and_its_database_files_are_owner_only(tmp_path):
    home = tmp_path / "new" / "home"
    modes = dict(line.split() for line in _run(_FRESH_SERVER, home).stdout.splitlines())
    assert modes == {
        "home": "0o700",
        "secret_key": "0o600",
        "db.sqlite3": "0o600",
        "db.sqlite3-wal": "0o600",
        "db.sqlite3-shm": "0o600",
    }


def test_start_up_warns_about_a_data_directory_others_can_reach(tmp_path):
    home = tmp_path / "home"
    _run(_FRESH_SERVER, home)
    quiet = _run(_START_UP, home)
    assert "can be reached by other users" not in quiet.stderr
    home.chmod(0o755)
    (home / "db.sqlite3").chmod(0o644)
    loud = _run(_START_UP, home)
    assert (
        f"{home} can be reached by other users of this machine (mode 0755); run: chmod 700 {home}"
        in loud.stderr
    )
    assert f"{home / 'db.sqlite3'} can be reached" in loud.stderr and "chmod 600" in loud.stderr
    assert "secret_key can be reached" not in loud.stderr
