"""Streaming: on_update → browser WebSocket frame latency, and 100 MB with bounded memory.

(a) One real daphne process serves the product plus a bare echo consumer
(``bench.echo_asgi``). The program package ``bench._stream_tool`` registers
``bench_stream``, whose every on_update line carries ``time.time_ns()``; a client
chats with the offline model (``/bench_stream chunks=N gap_ms=G``) and, for every
stamp in every ``tool_update`` frame, takes arrival time minus stamp (one machine,
one clock). The echo's one-way time (round trip / 2) on the same server is the
ceiling. (b) 100 MB through on_update with a 1 MB stream capacity: tracemalloc peak
in this process and resident high-water growth in a fresh one.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
from pathlib import Path

from bench._stream_memory import (
    STREAM_CAPACITY_CHARS,
    StreamMemory,
    stream_resident_growth,
    stream_traced_peak,
)
from bench._util import print_table, ratio
from bench._ws import (
    STAMP_PREFIX,
    ChatSeat,
    TurnRecord,
    chat_seats_create,
    chat_turn,
    daphne_start,
    echo_round_trips,
    percentile,
)
from tests.servers import make_server

__all__ = ["main"]

_CHUNKS_PER_TURN = 200
_TURNS = 3
_MODES = (("spaced 2 ms apart", 2.0), ("burst, no gap", 0.0))
_ECHO_ROUND_TRIPS = 400


def _update_latencies_ms(record: TurnRecord) -> list[float]:
    latencies = []
    for frame, arrived_ns in zip(record.frames, record.received_ns, strict=True):
        if frame.get("type") != "tool_update":
            continue
        for line in frame["text"].splitlines():
            if line.startswith(STAMP_PREFIX):
                latencies.append((arrived_ns - int(line.removeprefix(STAMP_PREFIX))) / 1e6)
    return latencies


async def _stream_turns(url: str, seat: ChatSeat, gap_ms: float) -> list[float]:
    """Latencies of every stamped update that reached the socket (a lost one has none)."""
    latencies: list[float] = []
    text = f"/bench_stream chunks={_CHUNKS_PER_TURN} gap_ms={gap_ms}"
    for _ in range(_TURNS):
        record = await chat_turn(url, seat, text, timeout=60)
        if record.stop_reason != "completed":
            raise RuntimeError(f"streaming turn ended with {record.stop_reason!r}")
        latencies.extend(_update_latencies_ms(record))
    return latencies


async def _latency_rows(url: str, seat: ChatSeat) -> list[list[object]]:
    # The first offline turn imports litellm in the server: keep it out of the figures.
    await chat_turn(url, seat, "/bench_stream chunks=1 gap_ms=0", timeout=120)
    echo_ms = [s * 1000 / 2 for s in await echo_round_trips(url, count=_ECHO_ROUND_TRIPS)]
    echo_p50 = statistics.median(echo_ms)
    rows: list[list[object]] = []
    for label, gap_ms in _MODES:
        latencies = await _stream_turns(url, seat, gap_ms)
        p50 = statistics.median(latencies)
        rows.append(
            [
                f"on_update → tool_update frame ({label})",
                f"{len(latencies)} of {_CHUNKS_PER_TURN * _TURNS}",
                f"{p50:.2f}",
                f"{percentile(latencies, 99):.2f}",
                ratio(p50, echo_p50),
            ]
        )
    rows.append(
        [
            "bare Channels echo, one way (round trip / 2): ceiling",
            f"{len(echo_ms)} of {_ECHO_ROUND_TRIPS}",
            f"{echo_p50:.2f}",
            f"{percentile(echo_ms, 99):.2f}",
            "1.00×",
        ]
    )
    return rows


def _measure_latency() -> list[list[object]]:
    with tempfile.TemporaryDirectory() as tmp:
        server = make_server(Path(tmp), OPENPROGRAM_PACKAGES="bench._stream_tool")
        server.create_users()
        [seat] = chat_seats_create(server, count=1, users=("alice",))
        daphne_start(server)
        try:
            return asyncio.run(_latency_rows(server.url, seat))
        finally:
            server.stop()


def _memory_row(label: str, memory: StreamMemory) -> list[object]:
    return [
        label,
        f"{memory.streamed_chars / 1024 / 1024:.0f} MB",
        f"{memory.peak_bytes / 1024 / 1024:.2f} MB",
        f"{memory.capacity_ratio:.2f}×",
        "yes" if memory.capacity_ratio < 2 else "NO",
    ]


def main() -> None:
    print_table(
        f"Streaming latency through daphne ({_TURNS} turns × {_CHUNKS_PER_TURN} updates, ms)",
        ["path", "delivered", "p50", "p99", "p50 vs echo"],
        _measure_latency(),
    )
    capacity_mb = STREAM_CAPACITY_CHARS / 1024 / 1024
    print_table(
        f"Streaming 100 MB through on_update, stream capacity {capacity_mb:.0f} MB",
        ["measure", "streamed", "memory", "÷ capacity", "bounded (< 2×)"],
        [
            _memory_row(
                "tracemalloc peak, with a consumer",
                asyncio.run(stream_traced_peak(with_consumer=True)),
            ),
            _memory_row(
                "resident growth (fresh process), with a consumer",
                stream_resident_growth(with_consumer=True),
            ),
            _memory_row(
                "resident growth (fresh process), no consumer",
                stream_resident_growth(with_consumer=False),
            ),
        ],
    )


if __name__ == "__main__":
    main()
