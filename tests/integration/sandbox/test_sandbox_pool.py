"""The pool of parked launchers (``sandbox_pool.py``): real launchers, cgroups and bubblewrap.

The limits themselves are hit through the pool in ``test_limits.py`` (each test runs pooled
and direct); here: no cgroup write on a pooled call's path, a pooled and a direct call at
once, a launcher given EOF or garbage runs nothing, and a ``kill -9`` of the process that
owns the pool leaves no launcher behind.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from openprogram import config
from openprogram.programs.builtin.bash import _run_confined
from openprogram.security.cgroups import CgroupSupport, cgroup_support, cgroup_sweep
from openprogram.security.confinement import confine
from openprogram.security.sandbox import sandbox_problem
from openprogram.security.sandbox_limits import SandboxLimits
from openprogram.security.sandbox_pool import Launcher, LauncherPool, sandbox_pool

pytestmark = [
    pytest.mark.skipif(sandbox_problem() is not None, reason=f"no sandbox: {sandbox_problem()}"),
    pytest.mark.skipif(
        cgroup_support().version is None,
        reason=f"no pool without cgroups: {cgroup_support().reason}",
    ),
]

LIMITS = SandboxLimits(memory_bytes=64 << 20, processes=32)


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Path]:
    previous = config.get_config()
    config.configure(home=tmp_path, sandbox_limits=LIMITS, sandbox_pool=1)
    workspace = tmp_path / "workspaces" / "alice"
    workspace.mkdir(parents=True)
    yield workspace
    config._config = previous


def _confine(workspace: Path, script: str):
    return confine(
        ["/bin/sh", "-c", script],
        workspace=workspace,
        limits=LIMITS,
        report_tmp=True,
        pooled=True,
    )


async def test_a_pooled_call_makes_no_cgroup_write_on_its_path(workspace):
    pool = sandbox_pool()
    assert await asyncio.to_thread(pool.wait_ready, LIMITS, 60)
    (parked,) = pool.parked()
    pid = parked.process.pid
    assert parked.cgroup.holds(pid)  # joined before any call came
    confined = await asyncio.to_thread(_confine, workspace, "echo in-the-sandbox")
    try:
        assert confined.launcher is parked and confined.cgroup is parked.cgroup
        assert confined.argv[0].endswith("prlimit")  # no `sh` joining anything first
        assert not any("cgroup.procs" in arg for arg in confined.argv)
        exit_code, text = await _run_confined(confined, str(workspace), None)
        assert (exit_code, text.strip()) == (0, "in-the-sandbox")
        assert confined.outcome(exit_code, text) is None
    finally:
        await asyncio.to_thread(confined.close)
    assert not any(directory.exists() for directory in parked.cgroup.directories)


async def test_a_pooled_and_a_direct_call_at_once_both_run_in_their_own_cgroup(workspace):
    pool = sandbox_pool()
    assert await asyncio.to_thread(pool.wait_ready, LIMITS, 60)
    pooled = await asyncio.to_thread(_confine, workspace, "cat /proc/self/cgroup; sleep 0.3")
    config.configure(home=workspace.parents[1], sandbox_limits=LIMITS, sandbox_pool=0)
    direct = await asyncio.to_thread(_confine, workspace, "cat /proc/self/cgroup; sleep 0.3")
    try:
        assert pooled.launcher is not None and direct.launcher is None  # nothing parked: direct
        assert direct.argv[0] == "/bin/sh" and pooled.cgroup and direct.cgroup
        assert {*pooled.cgroup.directories}.isdisjoint(direct.cgroup.directories)
        (a_code, a_text), (b_code, b_text) = await asyncio.gather(
            _run_confined(pooled, str(workspace), None), _run_confined(direct, str(workspace), None)
        )
        assert (a_code, b_code) == (0, 0)
        for text in (a_text, b_text):  # the sandbox's cgroup namespace: its own cgroup is /
            assert any(line.endswith(":pids:/") for line in text.splitlines())
    finally:
        for confined in (pooled, direct):
            await asyncio.to_thread(confined.close)


def _exit_code(process: subprocess.Popen) -> int:
    return process.wait(30)


def test_a_launcher_given_eof_or_garbage_runs_nothing(tmp_path):
    marker = tmp_path / "ran"
    missing_cwd = {"argv": ["/usr/bin/touch", str(marker)], "env": {}}
    for data in (b"", b"garbage", json.dumps(missing_cwd).encode(), b'{"argv": []}'):
        launcher = Launcher.spawn(cgroup_support(), LIMITS)
        try:
            write = launcher._argv_write
            assert write is not None
            os.write(write, data)
            launcher.discard()  # closes the argv pipe: EOF after ``data``
            assert launcher.process.returncode == 125, data
            assert not marker.exists()
        finally:
            launcher.discard()
        assert not any(directory.exists() for directory in launcher.cgroup.directories)
    # A whole call that cannot be started (a NUL in an argument: execve refuses it) says so.
    launcher = Launcher.spawn(cgroup_support(), LIMITS)
    try:
        launcher.start(["/usr/bin/touch", f"{marker}\0x"], cwd=str(tmp_path), env={})
        assert _exit_code(launcher.process) == 127 and not marker.exists()
    finally:
        launcher.discard()
    # The control: the same launcher, given a whole call, runs it in its cgroup.
    launcher = Launcher.spawn(cgroup_support(), LIMITS)
    try:
        process = launcher.start(
            ["touch", str(marker)], cwd=str(tmp_path), env={"PATH": "/usr/bin:/bin"}
        )
        assert _exit_code(launcher.process) == 0 and process.returncode == 0
        assert marker.exists()
    finally:
        launcher.discard()


_OWNER = """
import json, sys, time
from openprogram import config
from openprogram.security.sandbox_limits import SandboxLimits
from openprogram.security.sandbox_pool import sandbox_pool
limits = SandboxLimits(memory_bytes=64 << 20, processes=32)
config.configure(home=sys.argv[1], sandbox_limits=limits, sandbox_pool=2)
pool = sandbox_pool()
assert pool.wait_ready(limits, 60)
while len(pool.parked()) < 2:
    time.sleep(0.05)
print(json.dumps([
    {"pid": l.process.pid, "cgroups": [str(d) for d in l.cgroup.directories]}
    for l in pool.parked()
]), flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    """Running (not gone, not a zombie waiting for a reaper)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_kill_9_of_the_owner_leaves_no_launcher(tmp_path):
    owner = subprocess.Popen(
        [sys.executable, "-c", _OWNER, str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[3],
    )
    try:
        line = owner.stdout.readline()
        launchers = json.loads(line)
        assert len(launchers) == 2 and all(_alive(launcher["pid"]) for launcher in launchers)
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait(30)
        owner.stdout.close()
    deadline = time.monotonic() + 20
    while any(_alive(launcher["pid"]) for launcher in launchers):
        assert time.monotonic() < deadline, "a launcher outlived the process that owned it"
        time.sleep(0.05)
    # Their cgroups are named for the dead owner: the next start's sweep removes them.
    cgroup_sweep(cgroup_support())
    for launcher in launchers:
        assert not any(Path(directory).exists() for directory in launcher["cgroups"])


def test_without_cgroups_or_with_size_0_nothing_is_parked_and_calls_go_direct():
    assert LauncherPool(size=1, support=CgroupSupport(None, "none here")).take(LIMITS) is None
    assert LauncherPool(size=0, support=cgroup_support()).take(LIMITS) is None
