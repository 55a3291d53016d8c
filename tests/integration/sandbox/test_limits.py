"""Each sandbox limit, hit for real by an approved `bash`, and the sentence it leaves.

Small limits (64 MiB memory, 2 s CPU, 32 processes, 8 MiB files, 4 MiB /tmp) so each
test hits its limit in about a second; the sentences name the configured values. Every
test runs twice: through a parked launcher of the pool (``sandbox_pool.py``: each call
checked to have started from one) and on the direct path (the pool off).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from openprogram import config
from openprogram.agent.context import TurnContext, current_turn
from openprogram.agent.types import ApprovalDecision
from openprogram.programs.builtin.bash import bash
from openprogram.security.cgroups import cgroup_support
from openprogram.security.sandbox import sandbox_problem
from openprogram.security.sandbox_limits import SandboxLimits
from openprogram.security.sandbox_pool import sandbox_pool

pytestmark = pytest.mark.skipif(
    sandbox_problem() is not None, reason=f"no sandbox here: {sandbox_problem()}"
)
needs_cgroup = pytest.mark.skipif(
    cgroup_support().version is None, reason=f"rlimits only here: {cgroup_support().reason}"
)

MIB = 1 << 20
LIMITS = SandboxLimits(
    memory_bytes=64 * MIB, cpu_seconds=2, processes=32, file_bytes=8 * MIB, tmp_bytes=4 * MIB
)


_POOLED = {"on": False}
_PATHS = ["pooled", "direct"] if cgroup_support().version is not None else ["direct"]


@pytest.fixture(params=_PATHS)
def workspace(tmp_path: Path, request) -> Iterator[Path]:
    previous = config.get_config()
    _POOLED["on"] = request.param == "pooled"
    config.configure(home=tmp_path, sandbox_limits=LIMITS, sandbox_pool=int(_POOLED["on"]))

    async def approve(_request):
        return ApprovalDecision(approved=True)

    workspace = tmp_path / "workspaces" / "alice"
    workspace.mkdir(parents=True)
    token = current_turn.set(
        TurnContext(
            user_id="alice", conversation_id="c", workspace=workspace, approval_hook=approve
        )
    )
    yield workspace
    current_turn.reset(token)
    config._config = previous


async def _run(command: str):
    pool = sandbox_pool()
    if _POOLED["on"]:
        assert await asyncio.to_thread(pool.wait_ready, LIMITS, 60), "no launcher parked"
    taken = pool.taken
    result = await bash._agent_tool.execute("c1", {"command": command})
    assert not result.is_error, result.content
    assert pool.taken == taken + _POOLED["on"]  # it started from a parked launcher, or not
    return result


def _sandbox_cgroups() -> list[Path]:
    return [child for base in cgroup_support().bases for child in base.glob("call-*")]


@needs_cgroup
async def test_memory_past_the_limit_stops_the_command_with_137_and_says_so(workspace):
    # 120 MiB: within the address-space limit (3 x 64 MiB), past the cgroup's memory limit.
    result = await _run("python3 -c 'b = bytearray(120 << 20); print(len(b))'; echo after")
    assert result.details["exit_code"] == 0  # the shell went on: only the hog was killed
    assert "after" in result.content
    assert "stopped: the command used more than 64 MiB of memory" in result.content
    result = await _run("python3 -c 'b = bytearray(120 << 20)'")
    assert result.details["exit_code"] == 137
    assert result.details["stopped"] == "stopped: the command used more than 64 MiB of memory"


FORK_BOMB = """python3 -c '
import os, time
started = 0
for _ in range(100):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    started += 1
print(f"started={started}")
'"""


@needs_cgroup
async def test_a_fork_bomb_is_held_at_the_process_limit(workspace):
    result = await _run(FORK_BOMB)
    started = int(result.content.split("started=")[1].split()[0])
    assert 0 < started < LIMITS.processes
    assert "reached the limit of 32 processes" in result.content


async def test_cpu_past_the_limit_stops_the_command_and_says_so(workspace):
    result = await _run("python3 -c 'while True: pass'")
    assert result.details["exit_code"] == 128 + 24  # SIGXCPU
    assert "stopped: the command used more than 2 s of CPU" in result.content


async def test_a_file_past_the_limit_stops_the_writer_and_nothing_bigger_is_left(workspace):
    result = await _run("head -c 20000000 /dev/zero > big.bin")
    assert result.details["exit_code"] == 128 + 25  # SIGXFSZ
    assert "stopped: the command tried to write a file larger than 8 MiB" in result.content
    assert (workspace / "big.bin").stat().st_size <= LIMITS.file_bytes
    later = await _run("head -c 20000000 /dev/zero > big.bin; echo after")
    assert later.details["exit_code"] == 0 and "after" in later.content
    assert "stopped: the command tried to write a file larger than 8 MiB" in later.content


async def test_a_full_tmp_is_named_and_the_next_call_has_an_empty_one(workspace):
    result = await _run("cat /dev/zero > /tmp/fill; echo rc=$?")
    assert "No space left on device" in result.content and "rc=1" in result.content
    assert "/tmp is full (4 MiB)" in result.content
    again = await _run("ls -A /tmp; df -k /tmp | tail -1")
    assert "/tmp is full" not in again.content and "fill" not in again.content


async def test_a_command_within_its_limits_gets_no_sentence(workspace):
    result = await _run("python3 -c 'b = bytearray(8 << 20)'; head -c 1000 /dev/zero > /tmp/x")
    assert result.details == {"exit_code": 0}
    assert "stopped" not in result.content and "/tmp is full" not in result.content


async def test_the_limits_apply_inside_the_sandbox(workspace):
    result = await _run("ulimit -v; ulimit -f; ulimit -t; ulimit -c; df -k /tmp | tail -1")
    address_space, file_blocks, cpu, core, tmp = result.content.splitlines()[:5]
    assert int(address_space) * 1024 == LIMITS.address_space_bytes
    assert int(file_blocks) * 1024 == LIMITS.file_bytes  # bash counts KiB
    assert (int(cpu), int(core)) == (2, 0)
    assert int(tmp.split()[1]) * 1024 == LIMITS.tmp_bytes


@needs_cgroup
async def test_each_call_gets_its_own_cgroup_and_it_is_removed_after(workspace):
    pool = sandbox_pool()

    def parked() -> set[Path]:  # the pool's launchers wait in fresh cgroups of their own
        return {d for launcher in pool.parked() for d in launcher.cgroup.directories}

    if _POOLED["on"]:
        assert await asyncio.to_thread(pool.wait_ready, LIMITS, 60)
    before, used = set(_sandbox_cgroups()), parked()
    result = await _run("cat /proc/self/cgroup")
    if _POOLED["on"]:
        assert await asyncio.to_thread(pool.wait_ready, LIMITS, 60)
    after = set(_sandbox_cgroups())
    if _POOLED["on"]:
        assert used and not used & after  # the call's cgroup (its launcher's) went
        assert after - parked() == before - used  # nothing else was left
        assert not parked() & before  # the next call's is a new one: never reused
    else:
        assert not after - before  # (a launcher parked by a pooled test may retire meanwhile)
    lines = [line for line in result.content.splitlines() if ":memory:" in line or ":pids:" in line]
    if cgroup_support().version == "v1":
        # The sandbox's cgroup namespace shows its own cgroup as the root.
        assert lines and all(line.endswith(":/") for line in lines)


async def test_dev_is_read_only_and_dev_shm_is_bounded_too(workspace):
    result = await _run(
        "echo x > /dev/evil; cat /dev/zero > /dev/shm/fill; echo rc=$?; "
        "df -k /dev/shm | tail -1; echo ok > /dev/null && echo null-ok"
    )
    assert "Read-only file system" in result.content
    assert "No space left on device" in result.content and "rc=1" in result.content
    assert "null-ok" in result.content
    shm_kib = int(result.content.split("rc=1")[1].split()[1])
    assert shm_kib * 1024 <= LIMITS.tmp_bytes
