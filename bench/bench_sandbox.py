"""Shell sandbox start-up cost: `bash -c true` bare vs under bubblewrap (issue #21).

Side by side in one run, median of 41 each, interleaved so load on the machine hits
both columns alike: the bare process spawn vs the same command through
``sandbox_argv`` (new namespaces, mounts, die with parent); and the whole ``bash`` tool
call (approval hook, output pump, result) as the agent loop makes it, once with the
sandbox taken out (the wave-1 tool: 6.6 ms in docs/benchmarks.md) and once as shipped.
Target: the sandbox adds ≤ 20 ms per call.
"""

from __future__ import annotations

import asyncio
import importlib
import statistics
import tempfile
import time
from pathlib import Path
from unittest.mock import patch

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


async def _medians_ms(first, second) -> tuple[float, float]:
    """Median wall time of two coroutine factories, alternated round by round."""
    samples: tuple[list[float], list[float]] = ([], [])
    for _ in range(_ROUNDS):
        for make, into in ((first, samples[0]), (second, samples[1])):
            started = time.perf_counter()
            await make()
            into.append(time.perf_counter() - started)
    return statistics.median(samples[0]) * 1000, statistics.median(samples[1]) * 1000


def _unconfined(command, **_ignored) -> list[str]:
    """Stands in for sandbox_argv to time the tool without the sandbox (bench only)."""
    return list(command)


async def _measure(workspace: Path) -> list[list[object]]:
    # The module, not the function the package re-exports under the same name.
    bash_module = importlib.import_module("openprogram.programs.builtin.bash")

    async def approve(_request):
        return ApprovalDecision(approved=True)

    def call():
        return bash_module.bash._agent_tool.execute("b", {"command": "true"})

    async def call_unconfined():
        with patch.object(bash_module, "sandbox_argv", _unconfined):
            await call()

    current_turn.set(TurnContext(user_id="bench", workspace=workspace, approval_hook=approve))
    argv = ["bash", "-c", "true"]
    bare, boxed = await _medians_ms(
        lambda: _spawn(argv, str(workspace)),
        lambda: _spawn(sandbox_argv(argv, workspace=workspace), str(workspace)),
    )
    tool_bare, tool_boxed = await _medians_ms(call_unconfined, call)
    return [
        ["`bash -c true` process", f"{bare:.1f}", f"{boxed:.1f}", f"+{boxed - bare:.1f}"],
        [
            "`bash` tool call `true` (approved)",
            f"{tool_bare:.1f}",
            f"{tool_boxed:.1f}",
            f"+{tool_boxed - tool_bare:.1f}",
        ],
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
        ["what", "unsandboxed", "under bubblewrap", "added (target ≤ +20)"],
        rows,
    )
