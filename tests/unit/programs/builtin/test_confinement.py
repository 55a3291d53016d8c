"""Property: whatever path the model sends, the file tools stay inside the workspace.

A sentinel file and directory live beside the workspace (one of them a sibling named
``ws-evil``), reachable through symlinks planted inside it. For any generated path —
``..``, absolute, ``~``, unicode, NUL, through the symlinks — every file tool either
works inside the workspace or refuses, the sentinel's text never appears in a result,
and nothing outside the workspace is created or modified.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openprogram.agent.context import TurnContext, current_turn
from openprogram.programs.builtin.edit import edit
from openprogram.programs.builtin.glob import glob
from openprogram.programs.builtin.grep import grep
from openprogram.programs.builtin.list_dir import list_dir
from openprogram.programs.builtin.read import read
from openprogram.programs.builtin.write import write

SENTINEL = "SENTINEL-never-leaves-its-directory"

_segments = st.sampled_from(
    ["..", ".", "evil", "evil-file", "dangling", "inside", "ws-evil", "secret.txt", "~", "ü",
     "new", "\x00", ""]
)  # fmt: skip
_paths = st.one_of(
    st.lists(_segments, min_size=1, max_size=5).map("/".join),
    st.lists(_segments, min_size=1, max_size=5).map(lambda parts: "/" + "/".join(parts)),
    st.text(max_size=30),
)


def _build(root: Path) -> Path:
    workspace = root / "ws"
    (workspace / "inside").mkdir(parents=True)
    (root / "ws-evil").mkdir()
    (root / "ws-evil" / "secret.txt").write_text(SENTINEL + "\n")
    (workspace / "evil").symlink_to(root / "ws-evil")
    (workspace / "evil-file").symlink_to(root / "ws-evil" / "secret.txt")
    (workspace / "dangling").symlink_to(root / "ws-evil" / "planted.txt")
    (workspace / "inside" / "ok.txt").write_text("fine\n")
    return workspace


def _outside_state(root: Path, workspace: Path) -> dict[str, tuple[bytes, int]]:
    state: dict[str, tuple[bytes, int]] = {}
    for directory, dirnames, filenames in os.walk(root):
        if Path(directory) == workspace or workspace in Path(directory).parents:
            dirnames[:] = []
            continue
        for name in filenames:
            path = Path(directory, name)
            state[str(path)] = (path.read_bytes(), path.stat().st_mtime_ns)
        state[directory] = (b"dir", len(dirnames) + len(filenames))
    return state


def _run_tools(workspace: Path, user_path: str) -> list[str]:
    async def run_all() -> list[str]:
        calls = [
            (read, {"path": user_path}),
            (write, {"path": user_path, "content": "written by the model"}),
            (edit, {"path": user_path, "old_string": "SENTINEL", "new_string": "CHANGED"}),
            (list_dir, {"path": user_path}),
            (grep, {"pattern": "SENTINEL", "path": user_path}),
            (glob, {"pattern": "**/*", "path": user_path}),
        ]
        outputs = []
        for fn, args in calls:
            result = await fn._agent_tool.execute("call", args)
            outputs.append(result.content)
        return outputs

    token = current_turn.set(TurnContext(user_id="alice", workspace=workspace))
    try:
        return asyncio.run(run_all())
    finally:
        current_turn.reset(token)


def test_no_generated_path_reads_or_writes_outside_the_workspace():
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        workspace = _build(root)
        before = _outside_state(root, workspace)

        @settings(
            max_examples=150,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        )
        @given(user_path=_paths)
        def check(user_path: str) -> None:
            outputs = _run_tools(workspace, user_path)
            assert not any(SENTINEL in output for output in outputs), user_path
            assert _outside_state(root, workspace) == before, user_path

        check()
