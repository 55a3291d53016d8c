"""What a server process costs, read from the kernel (Linux ``/proc``), not from the client.

CPU time covers every thread of the process (the event loop, the database thread,
worker threads), so it is the server's whole bill for a load, whatever the client's
own share of the machine was.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path

__all__ = [
    "BENCH_CLIENTS",
    "MACHINE",
    "CpuWindow",
    "machine_busy_seconds",
    "process_cpu_seconds",
    "process_peak_rss_bytes",
    "process_rss_bytes",
    "process_threads_cpu_ns",
    "process_tree_cpu_seconds",
]

BENCH_CLIENTS = "bench clients"
"""The label of this process in a :class:`CpuWindow`: the benchmark's own clients."""
MACHINE = "machine"
"""The label of every process on the machine together (``/proc/stat``), in a :class:`CpuWindow`."""

_TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds ``pid`` has used so far, all its threads included."""
    # The command name (field 2) may hold spaces; fields after its ")" are fixed
    # (utime, stime, then cutime, cstime: the children's that were waited for).
    return _cpu_fields(pid, children=False)


def process_threads_cpu_ns(pid: int) -> int:
    """Nanoseconds on a CPU so far of ``pid``'s live threads (``/proc/<pid>/task/*/schedstat``).

    For short windows: ``/proc/<pid>/stat`` counts in clock ticks (10 ms here), a tenth
    of a millisecond per turn start at 100 starts; this counts in nanoseconds. Threads
    that exit inside the window take their time with them (a server's threads live)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, IndexError, ValueError):  # it exited meanwhile
            continue
    return total


def process_tree_cpu_seconds(pid: int) -> float:
    """CPU seconds ``pid`` and its children have used so far: its own, its reaped children's
    (``cutime``/``cstime``) and its live children's (with theirs). For a server that forks
    a process per client (PostgreSQL's backends), whose children come and go."""
    total = _cpu_fields(pid, children=True)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # it exited meanwhile
            continue
        if int(fields[1]) == pid:
            total += sum(int(f) for f in fields[11:15]) / _TICKS
    return total


def _cpu_fields(pid: int, *, children: bool) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11 : 15 if children else 13]) / _TICKS


def process_rss_bytes(pid: int) -> int:
    """Resident memory of ``pid`` now, in bytes."""
    return _status_bytes(pid, "VmRSS")


def process_peak_rss_bytes(pid: int) -> int:
    """The most resident memory ``pid`` has had so far (its high-water mark), in bytes."""
    return _status_bytes(pid, "VmHWM")


def _status_bytes(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) * 1024
    raise ValueError(f"no {field} line for process {pid!r}")


def machine_busy_seconds() -> float:
    """CPU seconds all cores have spent on anything but idling and waiting for I/O, since boot."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    ticks = [int(f) for f in fields[:8]]  # user nice system idle iowait irq softirq steal
    return (sum(ticks) - ticks[3] - ticks[4]) / _TICKS


class CpuWindow:
    """CPU seconds used between :meth:`start` and :meth:`stop`, per watched process.

    Besides the processes named in ``pids`` (the server, the fake model server), it
    measures this process (:data:`BENCH_CLIENTS`: a load bench's clients run here, all
    threads included) and the whole machine (:data:`MACHINE`, every process, whoever runs
    it), so a table can show how much of the machine's cores the server had to itself.
    """

    def __init__(self, pids: Mapping[str, int], trees: Mapping[str, int] | None = None) -> None:
        self._pids = dict(pids)
        self._trees = dict(trees or {})
        """Processes measured with their children (:func:`process_tree_cpu_seconds`)."""
        self._started: dict[str, float] = {}
        self._began = 0.0
        self.used: dict[str, float] = {}
        self.wall = 0.0

    def _now(self) -> dict[str, float]:
        now = {label: process_cpu_seconds(pid) for label, pid in self._pids.items()}
        now |= {label: process_tree_cpu_seconds(pid) for label, pid in self._trees.items()}
        now[BENCH_CLIENTS] = time.process_time()
        now[MACHINE] = machine_busy_seconds()
        return now

    def start(self) -> None:
        self._started, self._began = self._now(), time.perf_counter()

    def stop(self) -> None:
        self.wall = time.perf_counter() - self._began
        now = self._now()
        self.used = {label: now[label] - self._started[label] for label in now}

    def share(self, label: str) -> float:
        """``label``'s CPU over the window as a share of one core (1.0 = a whole core)."""
        return self.used[label] / self.wall if self.wall else 0.0
