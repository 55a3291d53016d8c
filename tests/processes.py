"""Finding a test's processes from outside, by a unique argument (PID namespaces hide PIDs)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["live_processes_with"]


def live_processes_with(argument: str) -> list[int]:
    """Host PIDs of live (not zombie) processes with ``argument`` in their argv."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if argument.encode() in argv and state != "Z":
            found.append(int(entry.name))
    return found
