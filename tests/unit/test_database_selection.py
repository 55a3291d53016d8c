"""`make test`'s PostgreSQL pass keeps exactly the tests that use the test database."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
USES_DATABASE = "tests/integration/site/test_account_settings.py"
NEVER_OPENS_IT = "tests/integration/site/test_origins.py"


def _collected(*args: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return [line for line in done.stdout.splitlines() if "::" in line]


def test_the_database_pass_keeps_database_tests_and_drops_the_others():
    everything = _collected(USES_DATABASE, NEVER_OPENS_IT)
    kept = _collected("--database-tests-only", USES_DATABASE, NEVER_OPENS_IT)
    assert any(node.startswith(NEVER_OPENS_IT) for node in everything)
    assert kept == [node for node in everything if node.startswith(USES_DATABASE)]
    assert kept


def test_a_pass_that_keeps_nothing_exits_5_not_green():
    only = ["--database-tests-only", NEVER_OPENS_IT]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *only],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 5, done.stdout[-2000:]
