"""Concurrency: 100 simultaneous WebSocket chats on one daphne process (SQLite, then
PostgreSQL), then on two processes sharing Redis.

Each chat is its own conversation (owners alternate between two users) and sends one
offline-model turn of three tool calls that need no approval. Every client connects
first, then all send at once; a turn's latency runs from its send to its
``turn_finished`` frame. A turn counts as completed only with ``stop_reason
"completed"`` and three ``tool_finished`` frames; for any other the bench prints how
far it got on the socket (frames, the last one, whether ``turn_finished`` came), what
the server's history says about its run, and the server log's warnings. Server CPU is
the user + system time of the daphne process(es) during the load (``/proc``), divided
by the turns: what a turn costs the server, whoever else shares the machine; on
PostgreSQL, next to it, what the database server's processes (the postmaster and every
backend, ``bench._proc.process_tree_cpu_seconds``) used per turn, when this bench
started that server (a ``TEST_POSTGRES_URL`` server is shared). Next to those,
the rig: the CPU of the bench's own clients (this process) per turn, and how busy the
whole machine was (``/proc/stat``, every process) over the load, so a reader sees what
the server had to share. The ceiling is the bare Channels echo consumer of
``bench.echo_asgi`` on the same server(s), hit by as many simultaneous sockets.

PostgreSQL is a private server this bench starts (``bench._postgres``); two processes
share one SQLite file (WAL mode, as settings configure it) and a redis-server this
bench starts on a free loopback port. Everything is stopped afterwards.

``python -m bench concurrency --only sqlite --turns 20`` runs a shorter, focused load;
``--help`` lists the options.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bench._postgres import postgres_available, postgres_database, postgres_server_pid
from bench._proc import BENCH_CLIENTS, MACHINE, CpuWindow
from bench._util import print_table, ratio
from bench._ws import (
    ChatSeat,
    StartLine,
    TurnIncomplete,
    TurnRecord,
    chat_seats_create,
    chat_turn,
    daphne_start,
    echo_round_trips,
    percentile,
)
from tests.servers import DaphneServer, make_server, redis_server

__all__ = ["main"]

_TURN_TEXT = "/todo_read\n/list_dir\n/todo_read"
_TOOL_CALLS = 3
_TURN_TIMEOUT = 120.0
_LOG_MARKERS = ("WARNING", "ERROR", "Traceback", "capacity")

_RUN_STATUS_CODE = """
import json
from chat_app.models import Run
ids = {ids!r}
out = {{}}
for public_id in ids:
    run = Run.objects.filter(conversation__public_id=public_id).order_by("-id").first()
    out[public_id] = None if run is None else [run.status, run.events.count(), run.error]
print("RUNS=" + json.dumps(out))
"""


@dataclass
class _Outcome:
    label: str
    latencies_ms: list[float]
    turns: int
    cpu: CpuWindow
    """The servers' (``server 0``, ``server 1``), the clients' and the machine's CPU."""
    echo_ms: list[float]
    lost: list[str] = field(default_factory=list)


def _completed(outcome: TurnRecord | BaseException) -> bool:
    if not isinstance(outcome, TurnRecord) or outcome.stop_reason != "completed":
        return False
    if not outcome.finished_frame:
        return False
    finished = [f for f in outcome.frames if f.get("type") == "tool_finished"]
    return len(finished) == _TOOL_CALLS and not any(f.get("is_error") for f in finished)


def _socket_story(outcome: TurnRecord | BaseException) -> str:
    if isinstance(outcome, TurnIncomplete):
        return outcome.describe()
    if isinstance(outcome, TurnRecord):
        calls = sum(1 for f in outcome.frames if f.get("type") == "tool_finished")
        seen = "seen" if outcome.finished_frame else "never arrived"
        return (
            f"ended {outcome.stop_reason!r} with {calls} of {_TOOL_CALLS} tool results, "
            f"turn_finished {seen}"
        )
    return repr(outcome)


def _server_story(server: DaphneServer, public_ids: list[str]) -> dict[str, str]:
    """What run history says about each conversation's last run."""
    try:
        output = server.shell(_RUN_STATUS_CODE.format(ids=public_ids))
        line = next(row for row in output.splitlines() if row.startswith("RUNS="))
        runs = json.loads(line.removeprefix("RUNS="))
    except Exception as exc:  # the story is a diagnosis; the bench still reports
        return {public_id: f"history unreadable: {exc}" for public_id in public_ids}
    stories = {}
    for public_id, run in runs.items():
        if run is None:
            stories[public_id] = "no run in history"
        else:
            status, events, error = run
            stories[public_id] = f"run {status!r} with {events} events in history" + (
                f" ({error})" if error else ""
            )
    return stories


def _log_warnings(servers: list[DaphneServer]) -> list[str]:
    lines = []
    for server in servers:
        rows = server.log().splitlines()
        for index, row in enumerate(rows):
            if row.startswith("Traceback"):
                lines.append(f"log :{server.port}: {_raised(rows[index + 1 :])}")
            elif any(marker in row for marker in _LOG_MARKERS):
                lines.append(f"log :{server.port}: {row[:200]}")
    return lines[:20]


def _raised(rows: list[str]) -> str:
    """A traceback's exception (its first unindented line) and the last frame before it."""
    where = ""
    for row in rows:
        if row.startswith("  File "):
            where = row.strip()
        elif row and not row.startswith(" "):
            return f"{row[:200]} (at {where[:160]})"
    return "a traceback without its exception"


async def _chats(urls: list[str], seats: list[ChatSeat]) -> list[TurnRecord | BaseException]:
    start = StartLine(len(seats))
    return await asyncio.gather(
        *(
            chat_turn(urls[i % len(urls)], seat, _TURN_TEXT, timeout=_TURN_TIMEOUT, start=start)
            for i, seat in enumerate(seats)
        ),
        return_exceptions=True,
    )


async def _echoes(urls: list[str], count: int) -> list[float]:
    samples = await asyncio.gather(
        *(echo_round_trips(urls[i % len(urls)], count=1) for i in range(count))
    )
    return [s[0] * 1000 for s in samples]


_DATABASE = "database server"
"""The CpuWindow label of a PostgreSQL server this bench started (all its processes)."""


def _run(
    label: str, servers: list[DaphneServer], turns: int, database_pid: int | None = None
) -> _Outcome:
    seats = chat_seats_create(servers[0], count=turns + len(servers))
    chats, warmups = seats[:turns], seats[turns:]
    for server in servers:
        daphne_start(server)
    try:
        urls = [server.url for server in servers]
        # Each process's first turn loads what turns need: keep that out of the figures.
        for url, seat in zip(urls, warmups, strict=True):
            asyncio.run(chat_turn(url, seat, _TURN_TEXT, timeout=_TURN_TIMEOUT))
        cpu = CpuWindow(
            {f"server {i}": s.proc.pid for i, s in enumerate(servers) if s.proc},
            trees={_DATABASE: database_pid} if database_pid else None,
        )
        cpu.start()
        outcomes = asyncio.run(_chats(urls, chats))
        cpu.stop()
        echo = asyncio.run(_echoes(urls, turns))
    finally:
        for server in servers:
            server.stop()
    result = _Outcome(label, [], turns, cpu, echo)
    failed: list[tuple[ChatSeat, TurnRecord | BaseException]] = []
    for seat, outcome in zip(chats, outcomes, strict=True):
        if _completed(outcome):
            assert isinstance(outcome, TurnRecord)
            result.latencies_ms.append(outcome.seconds * 1000)
        else:
            failed.append((seat, outcome))
    if failed:
        history = _server_story(servers[0], [seat.conversation_id for seat, _ in failed])
        for seat, outcome in failed:
            result.lost.append(
                f"{label}: conversation {seat.conversation_id}: socket: "
                f"{_socket_story(outcome)}; server: {history.get(seat.conversation_id)}"
            )
        result.lost += [f"{label}: {line}" for line in _log_warnings(servers)]
    return result


_SETUPS = ("sqlite", "postgres", "redis")


def _options(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench concurrency", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--only",
        default=os.environ.get("BENCH_CONCURRENCY_ONLY", ",".join(_SETUPS)),
        help="comma-separated setups to run: sqlite, postgres, redis (all; the environment "
        "variable BENCH_CONCURRENCY_ONLY sets the default)",
    )
    parser.add_argument("--turns", type=int, default=100, help="simultaneous chats (100)")
    options = parser.parse_args(argv)
    options.only = [setup.strip() for setup in options.only.split(",") if setup.strip()]
    for setup in options.only:
        if setup not in _SETUPS:
            parser.error(f"unknown setup {setup!r}: use {', '.join(_SETUPS)}")
    if options.turns < 2:
        parser.error("--turns needs at least 2")
    return options


@contextlib.contextmanager
def _setups(
    tmp: Path, only: list[str]
) -> Iterator[list[tuple[str, list[DaphneServer], int | None]]]:
    """(label, servers, PostgreSQL server pid) of each configuration, the services they
    need running meanwhile."""
    with contextlib.ExitStack() as stack:
        setups: list[tuple[str, list[DaphneServer], int | None]] = []
        if "sqlite" in only:
            single = make_server(tmp / "sqlite")
            single.create_users()
            setups.append(("1 daphne process, SQLite", [single], None))
        if "postgres" in only and postgres_available():
            url = stack.enter_context(postgres_database())
            server = make_server(tmp / "postgres", DATABASE_URL=url)
            server.create_users()
            setups.append(("1 daphne process, PostgreSQL", [server], postgres_server_pid(url)))
        elif "postgres" in only:
            print("PostgreSQL is not installed: its run is left out (make system-deps)")
        if "redis" in only:
            redis_url = stack.enter_context(redis_server(tmp))
            first = make_server(tmp / "shared", REDIS_URL=redis_url)
            first.create_users()
            second = make_server(tmp / "shared", REDIS_URL=redis_url)
            setups.append(("2 daphne processes, SQLite + Redis", [first, second], None))
        yield setups


def _rows(outcome: _Outcome) -> list[list[object]]:
    echo_p50 = statistics.median(outcome.echo_ms)
    done, turns, cpu = outcome.latencies_ms, outcome.turns, outcome.cpu
    server_cpu = sum(used for label, used in cpu.used.items() if label.startswith("server "))
    turn: list[object] = [f"{outcome.label}: chat turn, 3 tool calls", f"{len(done)} of {turns}"]
    if len(done) >= 2:
        p50 = statistics.median(done)
        turn += [
            f"{p50:.0f}",
            f"{percentile(done, 95):.0f}",
            f"{cpu.wall:.1f} s",
            f"{server_cpu * 1000 / turns:.1f} ms",
            f"{cpu.used[_DATABASE] * 1000 / turns:.1f} ms" if _DATABASE in cpu.used else "",
            f"{cpu.used[BENCH_CLIENTS] * 1000 / turns:.1f} ms",
            f"{100 * cpu.share(MACHINE):.0f} %",
            ratio(p50, echo_p50),
        ]
    else:
        turn += [""] * 8
    echo: list[object] = [
        f"{outcome.label}: bare Channels echo (ceiling)",
        f"{len(outcome.echo_ms)} of {turns}",
        f"{echo_p50:.1f}",
        f"{percentile(outcome.echo_ms, 95):.1f}",
        *[""] * 5,
        "1.00×",
    ]
    return [turn, echo]


def main(argv: list[str] | None = None) -> None:
    options = _options(sys.argv[1:] if argv is None else argv)
    outcomes: list[_Outcome] = []
    with tempfile.TemporaryDirectory() as tmp, _setups(Path(tmp), options.only) as setups:
        for label, servers, database_pid in setups:
            outcomes.append(_run(label, servers, options.turns, database_pid))
    print_table(
        f"{options.turns} simultaneous WebSocket chats, offline model (latency in ms)",
        [
            "server",
            "completed",
            "p50",
            "p95",
            "wall time",
            "server CPU per turn",
            "PostgreSQL server CPU per turn",
            "bench clients CPU per turn",
            f"machine busy (of {100 * (os.cpu_count() or 1)} %)",
            "p50 vs echo",
        ],
        [row for outcome in outcomes for row in _rows(outcome)],
    )
    lost = [line for outcome in outcomes for line in outcome.lost]
    if lost:
        # Reported, not raised, so `make bench` still prints the remaining tables.
        turns = sum(outcome.turns - len(outcome.latencies_ms) for outcome in outcomes)
        print(f"WARNING: {turns} turn(s) did not complete:", flush=True)
        for line in lost:
            print(f"  {line}", flush=True)


if __name__ == "__main__":
    main()
