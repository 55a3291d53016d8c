"""One code tree's file tools, timed on request: ``python bench/_file_tool_worker.py TREE``.

``bench_builtin`` starts one worker per tree (this checkout, and a throwaway worktree of
the baseline commit) and asks them in turn, round by round, so machine load hits both
alike. Only the tools' public API is used (``get_agent_tool(name).execute``), which both
trees share. Protocol: after ``ready``, each stdin line ``CASE NUMBER`` is answered with
the mean seconds per call of NUMBER calls of CASE; an empty line ends the worker.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "read_small": ("read", {"path": "pkg3/mod3.py"}),
    "read_page": ("read", {"path": "big.txt", "offset": 10_000}),
    "write_new_dir": ("write", {"path": "out/{n}/new.txt", "content": "x = 1\n" * 50}),
    "write_overwrite": ("write", {"path": "pkg2/mod2.py", "content": "x = 1\n" * 50}),
    "edit": ("edit", {"path": "pkg1/mod1.py", "old_string": "{old}", "new_string": "{new}"}),
    "list_dir": ("list_dir", {"path": "."}),
    "glob": ("glob", {"pattern": "**/*.py", "max_results": 2000}),
    "grep": ("grep", {"pattern": r"needle99\d", "max_matches": 200}),
}


def make_tree(workspace: Path, files: int) -> None:
    for n in range(files):
        path = workspace / f"pkg{n % 20}" / f"mod{n}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"def f{i}():\n    return {i}  # needle{n}\n" for i in range(50)))
    (workspace / "big.txt").write_text(
        "".join(f"line {i} " + "x" * 60 + "\n" for i in range(20_000))
    )


def main(tree: str) -> None:
    sys.path.insert(0, tree)
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from openprogram import config
    from openprogram.agent.context import TurnContext, current_turn
    from openprogram.programs import get_agent_tool

    home = Path(tempfile.mkdtemp(prefix="bench-fs-"))
    config.configure(home=home)
    workspace = home / "ws"
    workspace.mkdir()
    make_tree(workspace, files=1000)
    loop = asyncio.new_event_loop()
    current_turn.set(TurnContext(user_id="bench", workspace=workspace))
    calls = 0
    swap = ["return 7  #", "return 7 #"]

    def run(case: str) -> None:
        nonlocal calls
        name, template = CASES[case]
        args = {
            key: value.format(n=calls, old=swap[0], new=swap[1])
            if isinstance(value, str)
            else value
            for key, value in template.items()
        }
        if case == "edit":
            swap.reverse()
        calls += 1
        tool = get_agent_tool(name)
        assert tool is not None
        result = loop.run_until_complete(tool.execute("bench", args))
        if result.is_error:
            raise RuntimeError(f"{case} failed in {tree}: {result.content[:300]}")

    print("ready", flush=True)
    for line in sys.stdin:
        if not line.strip():
            break
        case, number = line.split()
        started = time.perf_counter()
        for _ in range(int(number)):
            run(case)
        print((time.perf_counter() - started) / int(number), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
