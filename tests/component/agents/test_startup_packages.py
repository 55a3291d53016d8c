"""The server's start-up loads OPENPROGRAM_PACKAGES, and a broken package never stops it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

_SCRIPT = """
import json, django
django.setup()
from openprogram_site.startup import start_background_services
start_background_services()
from openprogram.programs.registry import get
from openprogram.programs.loader import package_loads
print(json.dumps({
    "research_package": getattr(get("research"), "package", None),
    "loads": [[load.package, load.ok, load.error] for load in package_loads()],
}))
"""


def test_start_up_loads_the_configured_packages_and_survives_a_broken_one(tmp_path):
    env = {
        **os.environ,
        "OPENPROGRAM_HOME": str(tmp_path),
        "OPENPROGRAM_PACKAGES": "no_such_program_package, openprogram.examples.research_agent",
        "DJANGO_SETTINGS_MODULE": "openprogram_site.settings",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["research_package"] == "openprogram.examples.research_agent"
    loads = {package: (ok, error) for package, ok, error in report["loads"]}
    assert loads["openprogram.examples.research_agent"] == (True, None)
    ok, error = loads["no_such_program_package"]
    assert not ok and "No module named 'no_such_program_package'" in error
    assert "program package not loaded" in done.stderr
