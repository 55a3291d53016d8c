"""Security settings are parsed strictly and reach the framework's config."""

from __future__ import annotations

import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from openprogram_site.env import env_allow_hosts
from tests.servers import ROOT


def test_allow_host_entries_are_kept_when_well_formed(monkeypatch):
    monkeypatch.setenv("WEB_FETCH_ALLOW_HOSTS", "intranet.local, 127.0.0.1:8123 ,[::1]:9000")
    assert env_allow_hosts("WEB_FETCH_ALLOW_HOSTS") == [
        "intranet.local",
        "127.0.0.1:8123",
        "[::1]:9000",
    ]


@pytest.mark.parametrize("value", ["host:99999", "host:http", "a b", "[::1"])
def test_a_malformed_allow_host_entry_stops_start_up_naming_the_setting(monkeypatch, value):
    monkeypatch.setenv("WEB_FETCH_ALLOW_HOSTS", value)
    with pytest.raises(ImproperlyConfigured, match="WEB_FETCH_ALLOW_HOSTS"):
        env_allow_hosts("WEB_FETCH_ALLOW_HOSTS")


def test_the_server_passes_its_security_settings_to_the_framework(tmp_path):
    code = (
        "import os; os.environ['DJANGO_SETTINGS_MODULE']='openprogram_site.settings';"
        "import django; django.setup();"
        "from openprogram_site.startup import start_background_services as s; s();"
        "from openprogram.config import get_config as g; c=g();"
        "print(c.allow_shell, c.searxng_url, c.web_fetch_allow_hosts, c.web_fetch_timeout,"
        " c.workspaces_dir.name)"
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "OPENPROGRAM_HOME": str(tmp_path),
        "HOST": "0.0.0.0",
        "SEARXNG_URL": "http://searx.local:8080",
        "WEB_FETCH_ALLOW_HOSTS": "127.0.0.1:8123",
        "WEB_FETCH_TIMEOUT": "7",
        "OPENPROGRAM_WORKSPACES": str(tmp_path / "spaces"),
    }
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == (
        "False http://searx.local:8080 ('127.0.0.1:8123',) 7.0 spaces"
    )
