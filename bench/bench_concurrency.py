"""Concurrency: 100 simultaneous WebSocket chats, one daphne process, then two sharing Redis.

Each chat is its own conversation (owners alternate between two users) and sends one
offline-model turn of three tool calls that need no approval. Every client connects
first, then all send at once; a turn's latency runs from its send to its
``turn_finished`` frame. A turn counts as completed only with ``stop_reason
"completed"`` and three ``tool_finished`` frames; anything else is lost and fails
the bench after the tables print. The ceiling is the bare Channels echo consumer of
``bench.echo_asgi`` on the same server(s), hit by as many simultaneous sockets.

Two processes share one SQLite file (WAL mode, as settings configure it) and a
redis-server this bench starts on a free loopback port and stops afterwards.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from bench._util import print_table, ratio
from bench._ws import (
    ChatSeat,
    TurnRecord,
    chat_seats_create,
    chat_turn,
    daphne_start,
    echo_round_trips,
    percentile,
)
from tests.servers import DaphneServer, make_server, redis_server

__all__ = ["main"]

_CHATS = 100
_TURN_TEXT = "/todo_read\n/list_dir\n/todo_read"
_TOOL_CALLS = 3
_TURN_TIMEOUT = 120.0


def _completed(outcome: TurnRecord | BaseException) -> bool:
    if not isinstance(outcome, TurnRecord) or outcome.stop_reason != "completed":
        return False
    if not outcome.finished_frame:
        return False
    finished = [f for f in outcome.frames if f.get("type") == "tool_finished"]
    return len(finished) == _TOOL_CALLS and not any(f.get("is_error") for f in finished)


async def _chats(urls: list[str], seats: list[ChatSeat]) -> tuple[list[float], list[str]]:
    """All chats at once; (latencies of completed turns, descriptions of lost ones)."""
    outcomes = await asyncio.gather(
        *(
            chat_turn(urls[i % len(urls)], seat, _TURN_TEXT, timeout=_TURN_TIMEOUT)
            for i, seat in enumerate(seats)
        ),
        return_exceptions=True,
    )
    latencies, lost = [], []
    for seat, outcome in zip(seats, outcomes, strict=True):
        if _completed(outcome):
            latencies.append(outcome.seconds * 1000)
        else:
            detail = repr(outcome)
            if isinstance(outcome, TurnRecord):
                seen = "seen" if outcome.finished_frame else "never arrived"
                detail = f"ended {outcome.stop_reason!r}, turn_finished frame {seen}"
            lost.append(f"conversation {seat.conversation_id!r}: {detail}")
    return latencies, lost


async def _echoes(urls: list[str]) -> list[float]:
    samples = await asyncio.gather(
        *(echo_round_trips(urls[i % len(urls)], count=1) for i in range(_CHATS))
    )
    return [s[0] * 1000 for s in samples]


async def _measure(urls: list[str], seats: list[ChatSeat], warmups: list[ChatSeat]):
    # Each process imports litellm on its first offline turn: keep that out of the figures.
    for url, seat in zip(urls, warmups, strict=True):
        await chat_turn(url, seat, _TURN_TEXT, timeout=_TURN_TIMEOUT)
    started = time.perf_counter()
    latencies, lost = await _chats(urls, seats)
    wall = time.perf_counter() - started
    return latencies, lost, wall, await _echoes(urls)


def _run(servers: list[DaphneServer]) -> tuple[list[list[object]], list[str]]:
    seats = chat_seats_create(servers[0], count=_CHATS + len(servers))
    for server in servers:
        daphne_start(server)
    try:
        urls = [server.url for server in servers]
        latencies, lost, wall, echo = asyncio.run(_measure(urls, seats[:_CHATS], seats[_CHATS:]))
    finally:
        for server in servers:
            server.stop()
    label = f"{len(servers)} daphne process{'es' if len(servers) > 1 else ''}"
    echo_p50 = statistics.median(echo)
    rows: list[list[object]] = []
    if len(latencies) >= 2:
        p50 = statistics.median(latencies)
        rows.append(
            [
                f"{label}: chat turn, 3 tool calls",
                f"{len(latencies)} of {_CHATS}",
                f"{p50:.0f}",
                f"{percentile(latencies, 95):.0f}",
                f"{wall:.1f} s",
                ratio(p50, echo_p50),
            ]
        )
    else:
        rows.append(
            [f"{label}: chat turn, 3 tool calls", f"{len(latencies)} of {_CHATS}"] + [""] * 4
        )
    rows.append(
        [
            f"{label}: bare Channels echo (ceiling)",
            f"{len(echo)} of {_CHATS}",
            f"{echo_p50:.1f}",
            f"{percentile(echo, 95):.1f}",
            "",
            "1.00×",
        ]
    )
    return rows, [f"{label}: {item}" for item in lost]


def main() -> None:
    rows: list[list[object]] = []
    lost: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        single = make_server(Path(tmp) / "single")
        single.create_users()
        more_rows, more_lost = _run([single])
        rows += more_rows
        lost += more_lost
        shared = Path(tmp) / "shared"
        with redis_server(Path(tmp)) as redis_url:
            first = make_server(shared, REDIS_URL=redis_url)
            first.create_users()
            second = make_server(shared, REDIS_URL=redis_url)
            more_rows, more_lost = _run([first, second])
            rows += more_rows
            lost += more_lost
    print_table(
        f"{_CHATS} simultaneous WebSocket chats, offline model (latency in ms)",
        ["server", "completed", "p50", "p95", "wall time", "p50 vs echo"],
        rows,
    )
    if lost:
        # Reported, not raised, so `make bench` still prints the remaining tables.
        print(f"WARNING: {len(lost)} turn(s) incomplete on the socket:", flush=True)
        for line in lost[:20]:
            print(f"  {line}", flush=True)


if __name__ == "__main__":
    main()
