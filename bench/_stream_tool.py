"""A program package for the streaming bench, loaded by the server with OPENPROGRAM_PACKAGES.

``bench_stream`` emits ``chunks`` on_update lines, each carrying ``time.time_ns()`` at
the moment of the call, so the client (same machine, same clock) can measure how long
each update took to reach its WebSocket. ``gap_ms`` spaces the updates so each is
timed on its own instead of queueing behind the previous one.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from bench._ws import STAMP_PREFIX
from openprogram.programs.decorator import function

__all__ = ["PROGRAM_ENTRIES", "bench_stream"]


@function(name="bench_stream")
async def bench_stream(chunks: int, gap_ms: float, on_update: Callable[[str], None]) -> str:
    """Emit timestamped updates for the streaming bench.

    Args:
        chunks: how many updates to send
        gap_ms: pause between updates, in milliseconds
    """
    for _ in range(min(chunks, 10_000)):
        on_update(f"{STAMP_PREFIX}{time.time_ns()}\n")
        await asyncio.sleep(gap_ms / 1000)
    return f"sent {chunks} updates"


PROGRAM_ENTRIES = [bench_stream]
