"""The layers of docs/architecture.md hold: `lint-imports` with pyproject.toml's contracts.

framework (openprogram) < core < accounts < tools_app < usage_app < chat_app <
openprogram_site: a module imports from its own layer and those below, never above;
and the framework imports nothing of Django.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_import_contract_is_kept():
    done = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout and "Layers:" in done.stdout
