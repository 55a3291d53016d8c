"""A directory swapped for a symlink at any step of a file tool never lets it leave the workspace.

The attack: the person who approves a shell renames ``d`` (a real directory of their
workspace) away and puts a symlink to a directory outside in its place, at the exact
moment between the tool's decision about a path and its use. Each tool is run once per
filesystem step it takes, with the swap made just before that step
(``tests/swap_hook.py``), so every point between check and use is tried.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from openprogram.programs.builtin.edit import edit
from openprogram.programs.builtin.glob import glob
from openprogram.programs.builtin.grep import grep
from openprogram.programs.builtin.list_dir import list_dir
from openprogram.programs.builtin.read import read
from openprogram.programs.builtin.write import write
from tests.swap_hook import swap_before_step

SENTINEL = "SENTINEL-outside-the-workspace"

CASES: list[tuple[Any, dict[str, Any]]] = [
    (read, {"path": "d/secret.txt"}),
    (write, {"path": "d/planted.txt", "content": "written by the model"}),
    (write, {"path": "d/new/deeper/planted.txt", "content": "written by the model"}),
    (edit, {"path": "d/victim.txt", "old_string": "VICTIM", "new_string": "EDITED"}),
    (list_dir, {"path": "d"}),
    (glob, {"pattern": "**/*", "path": "d"}),
    (glob, {"pattern": "**/*"}),
    (grep, {"pattern": "SENTINEL|VICTIM", "path": "d"}),
    (grep, {"pattern": "SENTINEL|VICTIM"}),
    (grep, {"pattern": "SENTINEL|VICTIM", "path": "d/victim.txt"}),
]


def _outside_state(outside: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(outside)): path.read_bytes() if path.is_file() else b"<dir>"
        for path in sorted(outside.rglob("*"))
    }


@pytest.fixture
def layout(workspace: Path, tmp_path: Path) -> tuple[Path, Path]:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SENTINEL + "\n")
    (outside / "victim.txt").write_text(f"VICTIM {SENTINEL}\n")
    (outside / "only-outside.txt").write_text(SENTINEL + "\n")
    return workspace, outside


def _reset(workspace: Path) -> None:
    d = workspace / "d"
    if d.is_symlink():
        d.unlink()
    if d.exists():
        shutil.rmtree(d)
    moved = workspace / "d-moved"
    if moved.exists():
        shutil.rmtree(moved)
    d.mkdir()
    (d / "secret.txt").write_text("decoy\n")
    (d / "victim.txt").write_text("VICTIM decoy\n")


@pytest.mark.parametrize(("tool", "args"), CASES, ids=lambda v: getattr(v, "__name__", None))
async def test_a_symlink_swapped_in_at_any_step_never_leads_outside(turn, layout, call, tool, args):
    workspace, outside = layout
    before = _outside_state(outside)

    def swap() -> None:
        os.rename(workspace / "d", workspace / "d-moved")
        os.symlink(outside, workspace / "d")

    _reset(workspace)
    with swap_before_step(0, swap) as undisturbed:
        result = await call(tool, args)
    assert not result.is_error, result.content
    assert undisturbed.steps > 0

    for step in range(1, undisturbed.steps + 2):
        _reset(workspace)
        with swap_before_step(step, swap):
            result = await call(tool, args)
        assert SENTINEL not in result.content, (step, result.content)
        assert "only-outside" not in result.content, (step, result.content)
        assert _outside_state(outside) == before, step
