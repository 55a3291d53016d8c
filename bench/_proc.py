"""What a server process costs, read from the kernel (Linux ``/proc``), not from the client.

CPU time covers every thread of the process (the event loop, the database thread,
worker threads), so it is the server's whole bill for a load, whatever the client's
own share of the machine was.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["process_cpu_seconds", "process_peak_rss_bytes", "process_rss_bytes"]

_TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds ``pid`` has used so far, all its threads included."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    # The command name (field 2) may hold spaces; fields after its ")" are fixed.
    fields = stat.rsplit(")", 1)[1].split()
    utime, stime = int(fields[11]), int(fields[12])
    return (utime + stime) / _TICKS


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
