"""Shell sandbox start-up cost: `bash -c true` bare vs confined (issues #21, #32).

Side by side in one run, median of 41 each, interleaved so load on the machine hits
both columns alike: the bare process spawn vs the same command through
``sandbox_argv`` (new namespaces, mounts, die with parent), through ``confine`` with
the limits but no cgroup (``prlimit`` + bwrap + the ``/tmp`` report), and through
``confine`` with the call's cgroup (made, joined, read and removed per call: the cgroup
path measured separately); and the whole ``bash`` tool call (approval hook, output
pump, result) as the agent loop makes it, once with the sandbox taken out and once as
shipped. Target: the sandbox, limits included, adds ≤ 20 ms per call.
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
from openprogram.security import confinement
from openprogram.security.cgroups import cgroup_support
from openprogram.security.sandbox import sandbox_argv, sandbox_problem
from openprogram.security.sandbox_limits import SandboxLimits

__all__ = ["main"]

_ROUNDS = 41


async def _spawn(argv: list[str], cwd: str, pass_fds: tuple[int, ...] = ()) -> None:
    process = await asyncio.create_subprocess_exec(
        *argv, cwd=cwd, stdin=asyncio.subprocess.DEVNULL, start_new_session=True, pass_fds=pass_fds
    )
    await process.wait()


async def _confined(command: list[str], workspace: Path, *, cgroup: bool) -> None:
    """One call as ``bash`` makes it: confine, spawn, read what it hit, clean up."""
    with patch.object(confinement, "cgroup_support", _no_cgroup if not cgroup else cgroup_support):
        confined = confinement.confine(
            command, workspace=workspace, limits=SandboxLimits(), report_tmp=True
        )
    try:
        await _spawn(confined.argv, str(workspace), confined.pass_fds)
        confined.spawned()
        confined.outcome(0)
    finally:
        confined.close()


def _no_cgroup():
    return type(cgroup_support())(None, "bench: rlimits only")


async def _medians_ms(first, second) -> tuple[float, float]:
    """Median wall time of two coroutine factories, alternated round by round."""
    samples: tuple[list[float], list[float]] = ([], [])
    for _ in range(_ROUNDS):
        for make, into in ((first, samples[0]), (second, samples[1])):
            started = time.perf_counter()
            await make()
            into.append(time.perf_counter() - started)
    return statistics.median(samples[0]) * 1000, statistics.median(samples[1]) * 1000


def _unconfined(command, *, limits, **_ignored) -> confinement.Confined:
    """Stands in for confine to time the tool without the sandbox (bench only)."""
    return confinement.Confined(argv=list(command), limits=limits)


async def _measure(workspace: Path) -> list[list[object]]:
    # The module, not the function the package re-exports under the same name.
    bash_module = importlib.import_module("openprogram.programs.builtin.bash")

    async def approve(_request):
        return ApprovalDecision(approved=True)

    def call():
        return bash_module.bash._agent_tool.execute("b", {"command": "true"})

    async def call_unconfined():
        with patch.object(bash_module, "confine", _unconfined):
            await call()

    current_turn.set(TurnContext(user_id="bench", workspace=workspace, approval_hook=approve))
    argv = ["bash", "-c", "true"]
    bare, boxed = await _medians_ms(
        lambda: _spawn(argv, str(workspace)),
        lambda: _spawn(sandbox_argv(argv, workspace=workspace), str(workspace)),
    )
    _, limited = await _medians_ms(
        lambda: _spawn(argv, str(workspace)),
        lambda: _confined(argv, workspace, cgroup=False),
    )
    rows = [
        [
            "`bash -c true` process, bwrap only",
            f"{bare:.1f}",
            f"{boxed:.1f}",
            f"+{boxed - bare:.1f}",
        ],
        [
            "… as shipped but no cgroup (prlimit, /tmp report; as root: mount + setpriv)",
            f"{bare:.1f}",
            f"{limited:.1f}",
            f"+{limited - bare:.1f}",
        ],
    ]
    support = cgroup_support()
    if support.version is not None:
        _, grouped = await _medians_ms(
            lambda: _spawn(argv, str(workspace)),
            lambda: _confined(argv, workspace, cgroup=True),
        )
        rows.append(
            [
                f"… as shipped, with the call's cgroup ({support.version})",
                f"{bare:.1f}",
                f"{grouped:.1f}",
                f"+{grouped - bare:.1f}",
            ]
        )
    else:
        rows.append([f"… cgroup path: none here ({support.reason})", "", "", ""])
    tool_bare, tool_boxed = await _medians_ms(call_unconfined, call)
    return [
        *rows,
        [
            "`bash` tool call `true` (approved), everything as shipped",
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
        ["what", "unsandboxed", "confined", "added (target ≤ +20)"],
        rows,
    )
