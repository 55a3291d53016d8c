"""Per-call cgroups: the limits written, the self-join prefix, counters, removal and sweep.

The v1 path runs against this host's cgroups when it has them (as root); the v2 layout is
checked on a plain directory standing in for the delegated subtree (files the kernel
would provide are created by the writes).
"""

from __future__ import annotations

import os
import subprocess

import pytest

from openprogram.security.cgroups import CallCgroup, CgroupSupport, cgroup_support, cgroup_sweep
from openprogram.security.sandbox_limits import SandboxLimits

LIMITS = SandboxLimits(memory_bytes=64 << 20, processes=32)


def test_a_v2_call_gets_memory_max_no_swap_and_pids_max(tmp_path):
    support = CgroupSupport("v2", "test", (tmp_path,))
    call = CallCgroup.create(support, LIMITS)
    (group,) = call.directories
    assert group.parent == tmp_path and group.name.startswith("call-")
    assert (group / "memory.max").read_text() == str(64 << 20)
    assert (group / "memory.swap.max").read_text() == "0"
    assert (group / "pids.max").read_text() == "32"
    (group / "memory.events").write_text("low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n")
    (group / "pids.events").write_text("max 7\n")
    assert call.counters() == (1, 7)
    for name in ("memory.max", "memory.swap.max", "pids.max", "memory.events", "pids.events"):
        (group / name).unlink()  # a real cgroup's files go with its directory
    assert call.remove() and not group.exists()


def test_the_join_prefix_writes_its_own_pid_to_every_cgroup_then_execs(tmp_path):
    support = CgroupSupport("v1", "test", (tmp_path / "memory", tmp_path / "pids"))
    for base in support.bases:
        base.mkdir()
    call = CallCgroup.create(support, LIMITS)
    procs = [directory / "cgroup.procs" for directory in call.directories]
    done = subprocess.run(
        [*call.join_prefix(), "/bin/sh", "-c", "echo $$"], capture_output=True, text=True
    )
    pid = done.stdout.strip()
    assert done.returncode == 0 and pid.isdigit()
    assert [path.read_text().strip() for path in procs] == [pid, pid]  # exec kept the pid


def test_a_join_that_fails_stops_before_the_command(tmp_path):
    support = CgroupSupport("v2", "test", (tmp_path,))
    call = CallCgroup.create(support, LIMITS)
    (call.directories[0] / "cgroup.procs").mkdir()  # cannot be written
    done = subprocess.run(
        [*call.join_prefix(), "/bin/sh", "-c", "echo ran"], capture_output=True, text=True
    )
    assert done.returncode == 125 and "ran" not in done.stdout
    assert "could not join the sandbox cgroup" in done.stderr


def test_the_sweep_removes_calls_of_dead_servers_only(tmp_path):
    support = CgroupSupport("v2", "test", (tmp_path,))
    dead = tmp_path / "call-999999999-abc"
    alive = tmp_path / f"call-{os.getpid()}-def"
    other = tmp_path / "something-else"
    for directory in (dead, alive, other):
        directory.mkdir()
    assert cgroup_sweep(support) == 1
    assert not dead.exists() and alive.exists() and other.exists()


@pytest.mark.skipif(cgroup_support().version != "v1", reason="no cgroup v1 here")
def test_a_v1_call_is_a_real_memory_and_pids_cgroup_removed_after():
    call = CallCgroup.create(cgroup_support(), LIMITS)
    memory, pids = call.directories
    assert int((memory / "memory.limit_in_bytes").read_text()) == 64 << 20
    assert (pids / "pids.max").read_text().strip() == "32"
    done = subprocess.run(
        [*call.join_prefix(), "/bin/cat", "/proc/self/cgroup"], text=True, capture_output=True
    )
    memory_line = next(line for line in done.stdout.splitlines() if ":memory:" in line)
    assert memory_line.endswith("/" + memory.name)
    assert call.counters() == (0, 0)
    assert call.remove() and not memory.exists() and not pids.exists()
