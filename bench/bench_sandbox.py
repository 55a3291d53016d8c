"""Shell sandbox start-up cost: `bash -c true` bare vs under bubblewrap (issue #21).

Side by side in one run, median of 41 each: the bare process spawn the wave-1 bash
tool used, the same command through ``sandbox_argv`` (new namespaces, mounts, die with
parent), and the whole ``bash`` tool call (approval hook, output pump, result) as the
agent loop makes it. Target: the sandbox adds ≤ 20 ms per call.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from bench._util import print_table
from openprogram.agent.context import TurnContext, current_turn
from openprogram.agent.types import ApprovalDecision
from openprogram.security.sandbox import sandbox_argv, sandbox_problem

__all__ = ["main"]

_ROUNDS = 41


async def _spawn(argv: list[str], cwd: str) -> None:
    process = await asyncio.create_subprocess_exec(
        *argv, cwd=cwd, stdin=asyncio.subprocess.DEVNULL, start_new_session=True
    )
    await process.wait()


async def _median_ms(make) -> float:
    samples = []
    for _ in range(_ROUNDS):
        started = time.perf_counter()
        await make()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


async def _measure(workspace: Path) -> list[list[object]]:
    from openprogram.programs.builtin.bash import bash

    async def approve(_request):
        return ApprovalDecision(approved=True)

    current_turn.set(TurnContext(user_id="bench", workspace=workspace, approval_hook=approve))
    bare = await _median_ms(lambda: _spawn(["bash", "-c", "true"], str(workspace)))
    boxed = await _median_ms(
        lambda: _spawn(sandbox_argv(["bash", "-c", "true"], workspace=workspace), str(workspace))
    )
    tool = await _median_ms(lambda: bash._agent_tool.execute("b", {"command": "true"}))
    return [
        ["bash -c true, bare process", f"{bare:.1f}", "—"],
        ["bash -c true under bubblewrap", f"{boxed:.1f}", f"+{boxed - bare:.1f}"],
        ["bash tool call (sandboxed, approved)", f"{tool:.1f}", f"+{tool - bare:.1f}"],
    ]


def main() -> None:
    problem = sandbox_problem()
    if problem is not None:
        print(f"(sandbox bench skipped: {problem})\n")
        return
    with tempfile.TemporaryDirectory() as directory:
        rows = asyncio.run(_measure(Path(directory)))
    print_table(
        f"Shell sandbox start-up (median of {_ROUNDS}, ms)",
        ["what", "median ms", "over the bare process"],
        rows,
    )
