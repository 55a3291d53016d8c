"""The out path of a streamed piece: server CPU per piece from a turn's event to the socket.

One real daphne process (SQLite, in-process channel layer) serves ``chats`` conversations
at once; each runs the ``bench_stream`` tool (``bench._stream_tool``), whose updates are
relayed as ``tool_update`` frames exactly as a model's text is relayed as ``text_delta``
(turn events → outbox → relay → channel layer → consumer → JSON → WebSocket write), at
a model's pace (``gap_ms`` apart). Each round runs the load twice, with few and with many
pieces per turn, and reads the daphne process's CPU from ``/proc``: the difference per
extra piece is what one piece costs the server, the turn's fixed cost cancelled out.
What it leaves out is the provider's reading of a model stream (the in path); what it
includes besides the out path is the tool's own ``on_update`` and its pacing sleep.

``BENCH_FRAMES_ROUNDS`` (default 5), ``BENCH_FRAMES_CHATS`` (50) and ``BENCH_FRAMES_TABS``
(1; with 2, every conversation has a second open tab that receives the same frames).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench._proc import process_cpu_seconds
from bench._util import print_table
from bench._ws import (
    STAMP_PREFIX,
    ChatSeat,
    StartLine,
    TurnRecord,
    chat_seats_create,
    chat_turn,
    daphne_start,
    percentile,
)
from tests.servers import make_server

__all__ = ["main"]

_GAP_MS = 20.0
_FEW, _MANY = 10, 160


@dataclass
class _Load:
    cpu_seconds: float
    pieces: int
    frames: int
    latencies_ms: list[float]


def _stamps(record: TurnRecord) -> tuple[int, int, list[float]]:
    frames = pieces = 0
    latencies = []
    for frame, arrived_ns in zip(record.frames, record.received_ns, strict=True):
        if frame.get("type") != "tool_update":
            continue
        frames += 1
        for line in frame["text"].splitlines():
            if line.startswith(STAMP_PREFIX):
                pieces += 1
                latencies.append((arrived_ns - int(line.removeprefix(STAMP_PREFIX))) / 1e6)
    return frames, pieces, latencies


async def _watch(url: str, seat: ChatSeat, ready: asyncio.Event, done: asyncio.Event) -> int:
    """A second tab of ``seat``'s conversation: counts the frames it receives."""
    from bench._ws import _connect

    frames = 0
    async with _connect(url, f"/ws/chat/{seat.conversation_id}/", seat.cookie_header) as socket:
        ready.set()
        while not done.is_set():
            try:
                await asyncio.wait_for(socket.recv(), timeout=0.2)
            except TimeoutError:
                continue
            frames += 1
    return frames


async def _load(url: str, pid: int, seats: list[ChatSeat], pieces: int, tabs: int) -> _Load:
    done = asyncio.Event()
    watchers = []
    for seat in seats if tabs > 1 else ():
        ready = asyncio.Event()
        watchers.append(asyncio.create_task(_watch(url, seat, ready, done)))
        await ready.wait()
    start = StartLine(len(seats))
    text = f"/bench_stream chunks={pieces} gap_ms={_GAP_MS}"
    cpu_before = process_cpu_seconds(pid)
    records = await asyncio.gather(
        *(chat_turn(url, seat, text, timeout=120, start=start) for seat in seats)
    )
    cpu = process_cpu_seconds(pid) - cpu_before
    done.set()
    await asyncio.gather(*watchers)
    load = _Load(cpu_seconds=cpu, pieces=0, frames=0, latencies_ms=[])
    for record in records:
        frames, delivered, latencies = _stamps(record)
        load.frames += frames
        load.pieces += delivered
        load.latencies_ms.extend(latencies)
    return load


async def _rounds(url: str, pid: int, seats: list[ChatSeat], rounds: int, tabs: int) -> list:
    await chat_turn(url, seats[0], "/bench_stream chunks=1 gap_ms=0", timeout=120)  # warm-up
    results = []
    for _ in range(rounds):
        few = await _load(url, pid, seats, _FEW, tabs)
        many = await _load(url, pid, seats, _MANY, tabs)
        results.append((few, many))
    return results


def main() -> None:
    rounds = int(os.environ.get("BENCH_FRAMES_ROUNDS", "5"))
    chats = int(os.environ.get("BENCH_FRAMES_CHATS", "50"))
    tabs = int(os.environ.get("BENCH_FRAMES_TABS", "1"))
    with tempfile.TemporaryDirectory() as tmp:
        server = make_server(Path(tmp), OPENPROGRAM_PACKAGES="bench._stream_tool")
        server.create_users()
        seats = chat_seats_create(server, count=chats)
        daphne_start(server)
        try:
            assert server.proc is not None
            started = time.perf_counter()
            results = asyncio.run(_rounds(server.url, server.proc.pid, seats, rounds, tabs))
            wall = time.perf_counter() - started
        finally:
            server.stop()
    extra = chats * (_MANY - _FEW)
    per_piece_us = [(many.cpu_seconds - few.cpu_seconds) / extra * 1e6 for few, many in results]
    delivered = [many.pieces for _, many in results]
    frames_per_piece = [many.frames / max(many.pieces, 1) for _, many in results]
    latencies = [ms for _, many in results for ms in many.latencies_ms]
    per_turn_ms = [few.cpu_seconds / chats * 1000 for few, _ in results]
    print_table(
        f"Out path of a streamed piece: {chats} chats × {_MANY} pieces {_GAP_MS:.0f} ms apart, "
        f"{tabs} tab(s) each, one daphne process ({rounds} rounds, {wall:.0f} s)",
        ["measure", "median", "range"],
        [
            [
                "server CPU per extra piece (µs)",
                f"{statistics.median(per_piece_us):.1f}",
                f"{min(per_piece_us):.1f}–{max(per_piece_us):.1f}",
            ],
            [
                f"server CPU per turn of {_FEW} pieces (ms)",
                f"{statistics.median(per_turn_ms):.1f}",
                f"{min(per_turn_ms):.1f}–{max(per_turn_ms):.1f}",
            ],
            [
                "pieces delivered",
                f"{statistics.median(delivered):.0f} of {chats * _MANY}",
                f"{min(delivered)}–{max(delivered)}",
            ],
            [
                "frames per piece",
                f"{statistics.median(frames_per_piece):.2f}",
                f"{min(frames_per_piece):.2f}–{max(frames_per_piece):.2f}",
            ],
            [
                "added latency per piece p50 / p99 (ms)",
                (
                    f"{statistics.median(latencies):.1f} / {percentile(latencies, 99):.1f}"
                    if len(latencies) > 1
                    else "no pieces arrived"
                ),
                "",
            ],
        ],
    )


if __name__ == "__main__":
    main()
