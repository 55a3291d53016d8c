"""100 MB through a tool's on_update with a 1 MB stream capacity: how much memory it takes.

Shared by bench_runtime (traced peak) and bench_streaming (traced peak and resident
growth). Resident growth is measured in a fresh interpreter (``python -m
bench._stream_memory``) because a process's high-water mark remembers everything
that ran before it; the child reports JSON on its last line.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = [
    "STREAM_CAPACITY_CHARS",
    "STREAM_TOTAL_CHARS",
    "StreamMemory",
    "stream_resident_growth",
    "stream_traced_peak",
]

STREAM_TOTAL_CHARS = 100 * 1024 * 1024
STREAM_CAPACITY_CHARS = 1024 * 1024
_CHUNK_CHARS = 64 * 1024
_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class StreamMemory:
    streamed_chars: int
    peak_bytes: int
    """tracemalloc peak while streaming, or resident high-water growth (child process)."""

    @property
    def capacity_ratio(self) -> float:
        return self.peak_bytes / STREAM_CAPACITY_CHARS


def _streamer(on_update: Callable[[str], None]) -> str:
    """Stream a lot of text."""
    sent = 0
    while sent < STREAM_TOTAL_CHARS:
        on_update(f"{sent:016d}" * (_CHUNK_CHARS // 16))  # a fresh string per chunk
        sent += _CHUNK_CHARS
    return f"streamed {sent:,} characters"


async def _stream(*, with_consumer: bool) -> int:
    from openprogram.programs.decorator import build_function_tool

    tool = build_function_tool(_streamer, stream_capacity_chars=STREAM_CAPACITY_CHARS)
    received = [0]

    def consume(text: str) -> None:
        # A consumer that falls behind gets coalesced text, so this counts less than sent.
        received[0] += len(text)

    result = await tool.execute("bench", {}, on_update=consume if with_consumer else None)
    if result.is_error:
        raise RuntimeError(f"streaming tool failed: {result.content!r}")
    if with_consumer and not received[0]:
        raise RuntimeError("the on_update consumer received nothing")
    return STREAM_TOTAL_CHARS


def _warm_up() -> str:
    """Nothing; executed once so first-call imports and caches stay out of the figure."""
    return "ok"


async def stream_traced_peak(*, with_consumer: bool) -> StreamMemory:
    """Stream 100 MB in this process under tracemalloc; its peak is the figure."""
    from openprogram.programs.decorator import build_function_tool

    await build_function_tool(_warm_up).execute("warm-up", {}, on_update=lambda _: None)
    build_function_tool(_streamer, stream_capacity_chars=STREAM_CAPACITY_CHARS)
    tracemalloc.start()
    try:
        streamed = await _stream(with_consumer=with_consumer)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return StreamMemory(streamed_chars=streamed, peak_bytes=peak)


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field!r}")


def stream_resident_growth(*, with_consumer: bool, timeout: float = 120.0) -> StreamMemory:
    """Stream 100 MB in a fresh interpreter; growth of its resident high-water mark."""
    done = subprocess.run(
        [sys.executable, "-m", "bench._stream_memory", "consumer" if with_consumer else "none"],
        cwd=_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"resident-memory child failed: {done.stderr[-2000:]}")
    return StreamMemory(**json.loads(done.stdout.strip().splitlines()[-1]))


def _child(with_consumer: bool) -> None:
    from openprogram.programs.decorator import build_function_tool

    asyncio.run(build_function_tool(_warm_up).execute("warm-up", {}))
    build_function_tool(_streamer)  # import and warm everything before the baseline
    before = _status_kib("VmRSS")
    streamed = asyncio.run(_stream(with_consumer=with_consumer))
    growth = max(0, _status_kib("VmHWM") - before) * 1024
    print(json.dumps(asdict(StreamMemory(streamed_chars=streamed, peak_bytes=growth))))


if __name__ == "__main__":
    _child(sys.argv[1:] == ["consumer"])
