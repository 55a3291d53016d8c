"""`make test`'s passes (tests/make_test.sh): each runs whatever another's result, and the
run fails when any of them fails. The passes' programs are stand-ins here that record how
they were called and exit as told; what they run for real is `make test` itself."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_STAND_IN = """#!/bin/sh
echo "$(basename "$0") $*" >> "$CALLS"
case "$*" in
  *run_suite.py*) exit "$CONFORMANCE_EXIT" ;;
  *--database-tests-only*) exit "$POSTGRES_EXIT" ;;
esac
[ -n "${OPENPROGRAM_FS_FORCE_WALK:-}" ] && exit "$WALK_EXIT"
exit "$SQLITE_EXIT"
"""


def _run(tmp_path: Path, **exits: int) -> tuple[int, list[str], str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("pytest", "python"):
        program = bin_dir / name
        program.write_text(_STAND_IN)
        program.chmod(0o755)
    calls = tmp_path / "calls"
    env = {
        **os.environ,
        "BIN": str(bin_dir),
        "NODE": "node",
        "CONFORMANCE_JS": "index.js",
        "TEST_WORKERS": "2",
        "TEST_POSTGRES_URL": "postgres://stand-in",
        "TEST_LOGS_DIR": str(tmp_path / "logs"),
        "CALLS": str(calls),
        **{f"{name.upper()}_EXIT": str(exits.get(name, 0)) for name in _PASSES},
    }
    done = subprocess.run(
        [str(ROOT / "tests" / "make_test.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.returncode, calls.read_text().splitlines(), done.stdout


_PASSES = ("sqlite", "walk", "postgres", "conformance")


def test_every_pass_runs_and_a_clean_run_exits_0(tmp_path):
    code, calls, out = _run(tmp_path)
    assert code == 0, out
    assert len(calls) == 4
    sqlite, walk = (c for c in calls if c.startswith("pytest") and "--database" not in c)
    assert "-n 2 --dist loadscope" in sqlite
    assert "test_read.py" in walk
    (postgres,) = (c for c in calls if "--database-tests-only" in c)
    assert "-n 1" in postgres and "not e2e" in postgres
    assert any(c.startswith("python") and "--group core" in c for c in calls)
    assert "PostgreSQL pass exit 0, conformance exit 0" in out  # beside.log, printed


@pytest.mark.parametrize("failing", _PASSES)
@pytest.mark.parametrize("code", [1, 5])  # 5: pytest collected no tests
def test_any_failing_pass_fails_the_run_and_the_others_still_run(tmp_path, failing, code):
    exit_code, calls, out = _run(tmp_path, **{failing: code})
    assert exit_code != 0, out
    assert len(calls) == 4, calls
