"""Shell sandbox cost per call: bare vs bwrap vs the limits vs the cgroup path (issues #21, #32).

Four ways to run `bash -c true`, interleaved round by round (the order rotating each
round) so load on a shared machine hits every column alike, median of each:

- **bare**: the process spawn alone;
- **bwrap**: the same through ``sandbox_argv`` (namespaces, mounts, die with parent), as
  the server's own user;
- **limits**: through ``confine`` with the cgroup left out — ``prlimit``, the ``/tmp``
  report and, when the server is root, the workspace mount and ``setpriv``;
- **cgroup**: ``confine`` on the direct path, with the call's own cgroup made, joined,
  read and removed (what every call paid before the pool, and still pays when none is parked);
- **pooled**: ``confine`` as shipped: a launcher parked by the pool
  (``sandbox_pool.py``), already in a fresh cgroup, is given the argv; its cgroup is read and
  removed after. Before each pooled sample the bench waits (untimed) until one is parked,
  so every sample is pooled; the refill runs in the background while the other columns run.

Then the cgroup path piece by piece (make + limits, the join's two ``cgroup.procs`` writes
against the same shell without them, removal after a real call), the whole ``bash`` tool
call (approval hook, output pump, result, the quota measurement) with and without the
sandbox, and the workspace quota's measurement of a workspace of 50,000 files.
Target: the sandbox, limits included, adds ≤ 20 ms per call. ``uptime``'s load is printed:
the machine is shared.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from unittest.mock import patch

from bench._util import print_table, ratio
from openprogram.agent.context import TurnContext, current_turn
from openprogram.agent.types import ApprovalDecision
from openprogram.config import get_config
from openprogram.security import confinement, workspace_quota
from openprogram.security.cgroups import CallCgroup, cgroup_support
from openprogram.security.sandbox import sandbox_argv, sandbox_problem
from openprogram.security.sandbox_limits import SandboxLimits
from openprogram.security.sandbox_pool import sandbox_pool
from openprogram.security.sandbox_user import sandbox_user

__all__ = ["main"]

_ROUNDS = 41
_QUOTA_FILES = 50_000
_QUOTA_ROUNDS = 5
_JOIN_SPACING_S = 0.1


async def _spawn(argv: list[str], cwd: str, pass_fds: tuple[int, ...] = ()) -> None:
    process = await asyncio.create_subprocess_exec(
        *argv, cwd=cwd, stdin=asyncio.subprocess.DEVNULL, start_new_session=True, pass_fds=pass_fds
    )
    await process.wait()


def _no_cgroup():
    return type(cgroup_support())(None, "bench: rlimits only")


async def _confined(
    command: list[str],
    workspace: Path,
    *,
    cgroup: bool,
    removal: list[float] | None = None,
    pooled: bool = False,
) -> None:
    """One call as ``bash`` makes it: confine, spawn, read what it hit, clean up."""
    with patch.object(confinement, "cgroup_support", cgroup_support if cgroup else _no_cgroup):
        confined = confinement.confine(
            command, workspace=workspace, limits=SandboxLimits(), report_tmp=True, pooled=pooled
        )
    try:
        if pooled:
            if confined.launcher is None:
                raise RuntimeError("bench: no launcher was parked")
            os.close(confined.launcher.hand_over("output"))
            await confined.launcher.start(
                confined.argv, cwd=str(workspace), env=dict(os.environ)
            ).wait()
        else:
            await _spawn(confined.argv, str(workspace), confined.pass_fds)
        confined.spawned()
        confined.outcome(0)
    finally:
        started = time.perf_counter()
        confined.close()
        if removal is not None:
            removal.append(time.perf_counter() - started)


async def _interleaved_ms(
    columns: dict[str, Callable[[], Awaitable[None]]],
    rounds: int = _ROUNDS,
    *,
    spacing: float = 0.0,
    before: dict[str, Callable[[], Awaitable[None]]] | None = None,
) -> dict[str, float]:
    """Median wall time (ms) of each coroutine factory, one of each per round, rotating;
    ``spacing`` seconds of rest before each sample, ``before[name]`` awaited untimed."""
    names = list(columns)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(rounds):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            if spacing:
                await asyncio.sleep(spacing)
            if before and name in before:
                await before[name]()
            started = time.perf_counter()
            await columns[name]()
            samples[name].append(time.perf_counter() - started)
    return {name: statistics.median(values) * 1000 for name, values in samples.items()}


def _unconfined(command, *, limits, **_ignored) -> confinement.Confined:
    """Stands in for confine to time the tool without the sandbox (bench only)."""
    return confinement.Confined(argv=list(command), limits=limits)


async def _process_rows(workspace: Path) -> tuple[list[list[object]], list[float]]:
    argv = ["bash", "-c", "true"]
    removal: list[float] = []
    columns: dict[str, Callable[[], Awaitable[None]]] = {
        "bare": lambda: _spawn(argv, str(workspace)),
        "bwrap": lambda: _spawn(sandbox_argv(argv, workspace=workspace), str(workspace)),
        "limits": lambda: _confined(argv, workspace, cgroup=False),
    }
    support = cgroup_support()
    before: dict[str, Callable[[], Awaitable[None]]] = {}
    if support.version is not None:
        columns["cgroup"] = lambda: _confined(argv, workspace, cgroup=True, removal=removal)
        columns["pooled"] = lambda: _confined(argv, workspace, cgroup=True, pooled=True)
        pool = sandbox_pool()
        before["pooled"] = lambda: asyncio.to_thread(pool.wait_ready, SandboxLimits(), 60)
    medians = await _interleaved_ms(columns, before=before)
    bare = medians["bare"]
    labels = {
        "bare": "bare `bash -c true`",
        "bwrap": "bwrap only (namespaces, mounts; the server's uid)",
        "limits": "+ limits, no cgroup (prlimit, /tmp report; as root: mount + setpriv)",
        "cgroup": f"+ the call's cgroup ({support.version}), made and joined on the call's path",
        "pooled": f"+ the call's cgroup ({support.version}), a parked launcher: as shipped",
    }
    rows: list[list[object]] = [
        [labels[name], f"{value:.1f}", ratio(value, bare), f"+{value - bare:.1f}"]
        for name, value in medians.items()
    ]
    if support.version is None:
        rows.append([f"cgroup path: none here ({support.reason})", "", "", ""])
    return rows, removal


async def _cgroup_rows(workspace: Path, removal: list[float]) -> list[list[object]]:
    """The cgroup path's pieces, each timed on its own."""
    support = cgroup_support()
    if support.version is None:
        return []
    limits = SandboxLimits()
    made: list[float] = []
    for _ in range(_ROUNDS):
        started = time.perf_counter()
        call = CallCgroup.create(support, limits)
        made.append(time.perf_counter() - started)
        call.remove()
    plain = ["/bin/sh", "-c", "exec true"]
    groups: list[CallCgroup] = []

    async def joined() -> None:
        call = CallCgroup.create(support, limits)
        groups.append(call)
        await _spawn([*call.join_prefix(), "true"], str(workspace))

    # Spaced as calls are: a write to cgroup.procs takes the kernel's threadgroup lock for
    # writing, which waits for an RCU grace period unless another write just did.
    join = await _interleaved_ms(
        {"plain": lambda: _spawn(plain, str(workspace)), "join": joined}, spacing=_JOIN_SPACING_S
    )
    for call in groups:
        call.remove()
    writes = len(support.bases)
    return [
        [
            f"make the call's cgroup{'s' if writes > 1 else ''} and write the limits",
            f"{statistics.median(made) * 1000:.2f}",
        ],
        [
            f"join: `sh` writing its pid to {writes} `cgroup.procs`, minus the same `sh` "
            f"without (calls {_JOIN_SPACING_S * 1000:.0f} ms apart)",
            f"{join['join'] - join['plain']:.2f}",
        ],
        [
            "remove after a real call (waits for its last process to leave)",
            f"{statistics.median(removal) * 1000:.2f}" if removal else "",
        ],
    ]


async def _tool_row(workspace: Path) -> list[object]:
    # The module, not the function the package re-exports under the same name.
    bash_module = importlib.import_module("openprogram.programs.builtin.bash")

    async def approve(_request):
        return ApprovalDecision(approved=True)

    async def call() -> None:
        result = await bash_module.bash._agent_tool.execute("b", {"command": "true"})
        assert not result.is_error, result.content

    async def call_unconfined() -> None:
        with patch.object(bash_module, "confine", _unconfined):
            await call()

    current_turn.set(TurnContext(user_id="bench", workspace=workspace, approval_hook=approve))
    pool = sandbox_pool()
    medians = await _interleaved_ms(
        {"bare": call_unconfined, "shipped": call},
        before={"shipped": lambda: asyncio.to_thread(pool.wait_ready, SandboxLimits(), 60)},
    )
    bare, shipped = medians["bare"], medians["shipped"]
    return [
        "`bash` tool call `true` (approved, quota measured), as shipped (pooled) vs no sandbox",
        f"{bare:.1f} → {shipped:.1f}",
        ratio(shipped, bare),
        f"+{shipped - bare:.1f}",
    ]


def _quota_rows(directory: Path) -> list[list[object]]:
    """The quota's measurement after a shell call, for a workspace of many small files."""
    workspace = directory / "many"
    for index in range(_QUOTA_FILES):
        folder = workspace / f"d{index // 100:03}"
        if index % 100 == 0:
            folder.mkdir(parents=True)
        (folder / f"f{index % 100:02}").write_bytes(b"x" * 100)
    walks, waits = [], []
    for _ in range(_QUOTA_ROUNDS):
        started = time.perf_counter()
        workspace_quota.shell_usage_note(workspace)
        waits.append(time.perf_counter() - started)
        workspace_quota.workspace_usage(workspace)  # waits for the walk's lock: calls are apart
        walks.append(workspace_quota._last_walk_s[str(workspace)])
    files = f"{_QUOTA_FILES:,} files in 500 folders"
    return [
        [f"the walk after each `bash` call, {files}", f"{statistics.median(walks) * 1000:.1f}"],
        [
            "what the call's result waits for it (the first walk of a workspace: all of it; "
            "after a slow one: ≤ 50 ms)",
            f"{statistics.median(waits) * 1000:.1f}",
        ],
    ]


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} CPUs"


def main() -> None:
    problem = sandbox_problem()
    if problem is not None:
        print(f"(sandbox bench skipped: {problem})\n")
        return
    config = get_config()
    user = sandbox_user(uid=config.sandbox_uid, gid=config.sandbox_gid)
    with tempfile.TemporaryDirectory() as directory:
        workspace = Path(directory) / "workspace"
        workspace.mkdir()
        if user.switch:  # a root server's workspaces are the sandbox user's (sandbox_user.py)
            os.chown(workspace, user.uid, user.gid)
        load_before = _load()
        rows, removal = asyncio.run(_process_rows(workspace))
        pieces = asyncio.run(_cgroup_rows(workspace, removal))
        rows.append(asyncio.run(_tool_row(workspace)))
        load_after = _load()
        quota = _quota_rows(Path(directory))
    print(f"({load_before} before, {load_after} after)\n")
    print_table(
        f"Shell sandbox cost per call (median of {_ROUNDS}, interleaved, ms)",
        ["what", "median", "× bare", "added (target ≤ +20)"],
        rows,
    )
    if pieces:
        print_table("The cgroup path, piece by piece (median, ms)", ["piece", "ms"], pieces)
    print_table("Workspace quota measurement (ms)", ["what", "ms"], quota)
