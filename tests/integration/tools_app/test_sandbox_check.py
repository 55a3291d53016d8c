"""``manage.py sandbox_check`` says which sandbox limits are in force here, and why not."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from openprogram.security.cgroups import cgroup_support
from openprogram.security.sandbox import sandbox_problem

ROOT = Path(__file__).resolve().parents[3]


def _check(tmp_path: Path, **env: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", "sandbox_check"],
        cwd=ROOT,
        env={**os.environ, "OPENPROGRAM_HOME": str(tmp_path), **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def test_it_lists_each_limit_with_its_configured_value_and_how_it_is_enforced(tmp_path):
    if sandbox_problem() is not None:
        assert "unavailable" in _check(tmp_path)
        return
    rows = {
        line.split("  ")[0]: line
        for line in _check(tmp_path, OPENPROGRAM_SANDBOX_MEMORY_MB="512").splitlines()
    }
    assert set(rows) == {"memory", "processes", "CPU", "largest file", "/tmp", "user", "launchers"}
    if os.geteuid() == 0:
        assert "65534:65534" in rows["user"] and "switches to it" in rows["user"]
    else:
        assert f"{os.getuid()}:{os.getgid()}" in rows["user"]
    assert "512 MiB" in rows["memory"] and "1.5 GiB address space" in rows["memory"]
    assert "60 s" in rows["CPU"] and "256 MiB" in rows["/tmp"]
    support = cgroup_support()
    if support.version is None:
        assert f"not enforced: {support.reason}" in rows["processes"]
    else:
        assert f"cgroup {support.version}" in rows["memory"]
        assert f"cgroup {support.version}" in rows["processes"]
        assert (
            rows["launchers"].split()[1] == "1" and "a call waits for no join" in rows["launchers"]
        )


def test_it_says_when_no_launcher_is_parked(tmp_path):
    if sandbox_problem() is not None:
        return
    output = _check(tmp_path, OPENPROGRAM_SANDBOX_POOL="0")
    row = next(line for line in output.splitlines() if line.startswith("launchers"))
    assert row.split()[1] == "0" and "none parked" in row


def test_without_bubblewrap_it_says_the_shell_is_not_offered(tmp_path):
    output = _check(tmp_path, OPENPROGRAM_BWRAP="/nonexistent/bwrap")
    assert "unavailable" in output and "bubblewrap" in output and "not offered" in output
