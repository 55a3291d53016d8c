"""Tools the agent tests register (inside ``empty_registry``), built with the real @function."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from openprogram.programs.decorator import function


def register_echo() -> None:
    @function
    def echo(text: str) -> str:
        """Repeat the text back."""
        return f"echo: {text}"


def register_add() -> None:
    @function
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b


def register_rendezvous(parties: int = 2) -> None:
    """A tool whose calls only finish when ``parties`` of them run at the same time."""
    arrived: list[str] = []
    everyone_here = asyncio.Event()

    @function(timeout=60)  # the others may start late on a loaded machine
    async def rendezvous(name: str) -> str:
        """Wait until the other callers arrive."""
        arrived.append(name)
        if len(arrived) >= parties:
            everyone_here.set()
        await everyone_here.wait()
        return f"{name} met {len(arrived) - 1} others"


def register_slow(timeout: float = 0.2) -> None:
    @function(timeout=timeout)
    async def slow() -> str:
        """Never finishes in time."""
        await asyncio.Event().wait()
        return "unreachable"


def register_deferred_cron() -> None:
    @function(defer=True)
    def cron_schedule(when: str) -> str:
        """Schedule a job at a cron expression."""
        return f"scheduled at {when}"


def register_guarded_delete(deleted: list[str]) -> None:
    @function(requires_approval=True)
    def delete_note(title: str) -> str:
        """Delete a note (asks first)."""
        deleted.append(title)
        return f"deleted {title}"


def register_waits_for_stop(on_start: Callable[[], Any]) -> None:
    @function
    async def wait_for_stop(on_update: Callable[[str], None]) -> str:
        """Reports that it started, then runs until stopped."""
        on_update("started")
        on_start()
        await asyncio.Event().wait()
        return "unreachable"
