"""Swap a directory for a symlink at the N-th filesystem step a piece of code takes.

The person who approves a shell can rename things in their workspace at any moment. To
make that moment deterministic, a Python audit hook counts the filesystem steps the code
under test takes (``open``, ``os.scandir``, ``os.mkdir``, ``os.rename``, ``os.remove``,
``os.listdir`` and every ``ctypes`` call, which is how ``openat2`` is reached) and runs
the swap just before step N. Running the code once per N covers every point between a
path's check and its use.

Audit hooks cannot be removed, so one hook is installed for the process and does
nothing unless :func:`swap_before_step` has armed it.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["StepCount", "swap_before_step"]

_EVENTS = frozenset(
    {
        "open",
        "os.scandir",
        "os.listdir",
        "os.mkdir",
        "os.rename",
        "os.remove",
        "os.rmdir",
        "os.symlink",
        "os.link",
        "os.truncate",
        "os.chmod",
        "ctypes.call_function",
    }
)
_lock = threading.Lock()
_armed: list[Callable[[str, tuple[Any, ...]], None]] = []


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if _armed and event in _EVENTS:
        _armed[0](event, args)


sys.addaudithook(_hook)


class StepCount:
    """How many filesystem steps the code took while armed (the swap's own not counted)."""

    def __init__(self) -> None:
        self.steps = 0
        self.swapped = False


@contextmanager
def swap_before_step(step: int, swap: Callable[[], None]) -> Iterator[StepCount]:
    """Run ``swap`` once, just before the code's ``step``-th filesystem step (1-based).

    ``step=0`` never swaps: use it to count the steps of an undisturbed run.
    """
    count = StepCount()

    def on_event(event: str, args: tuple[Any, ...]) -> None:
        count.steps += 1
        if count.steps == step and not count.swapped:
            _armed.clear()  # the swap's own renames are not steps of the code under test
            try:
                swap()
            finally:
                count.swapped = True
                _armed.append(on_event)

    with _lock:
        _armed.append(on_event)
        try:
            yield count
        finally:
            _armed.clear()
