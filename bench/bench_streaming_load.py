"""Streaming load: 100 simultaneous chats with a model that streams like a real one.

A fake OpenAI-compatible server in its own process (``bench._paced_model``, one event
loop pacing every stream) streams every model call through real HTTP at 50 text pieces
a second, each piece a stamp of when it was sent; a turn is two calls of 150 pieces (300
in all) with two tool calls (``todo_read``, ``list_dir``) between them. One daphne
process (SQLite) serves the chats. First the same turn runs alone a few times (the
baseline), then the load, once per arrival pattern: ``burst`` (every client sends in the
same instant) and ``spread`` (the sends at random moments over 2 s, as independent users
arrive). While each load streams, a few newcomers start one by one (the first 0.5 s
after every load turn streamed its first token, then one a second).

Reported, per column: pieces delivered (every stamp must reach its socket), time to first
token (send → first ``text_delta`` frame) p50/p95 of the load's turns and of the
newcomers against the turn alone, the latency each piece added between the model server
writing it and the client socket reading it (one machine, one clock), the server's CPU
(``/proc``, all threads) from the first send until every load turn had its first token
(per turn: what a turn start costs, pieces streamed meanwhile included), per turn and as
a share of one core, and its resident memory. The rig is measured too: the fake model
server's process, the bench's own clients and the whole machine (``/proc/stat``, every
process), so the table shows how much of the two cores the server had to itself.

The model answers its first piece one pacing gap (20 ms) after each request: the hardest
case for the server, as nothing of its own work hides behind the model's. Hosted models
take 100-300 ms before their first token (median p50 of a public table of twelve,
deploybase.ai, March 2026: ~200 ms); ``--model-latency 200`` adds that wait to every
call, and the time-to-first-token ratio then says what a user of such a model sees.

``python -m bench streaming_load --chats 20 --arrivals spread`` runs a shorter, focused
load; ``--help`` lists the options.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
from pathlib import Path

from bench._paced_model import MODEL, TOOLS_PER_TURN, paced_model_start
from bench._proc import (
    CpuWindow,
    process_peak_rss_bytes,
    process_rss_bytes,
    process_threads_cpu_ns,
)
from bench._streaming_report import MODEL_SERVER, SERVER, Alone, Load, rows
from bench._streaming_turns import ARRIVALS, FirstTokens, NewcomerGate, Turns, arrival_offsets
from bench._util import print_table
from bench._ws import ChatSeat, StartLine, TurnRecord, chat_seats_create, chat_turn, daphne_start
from tests.servers import make_server

__all__ = ["main"]

_TOKENS_PER_SECOND = 50
_TOKENS_PER_CALL = 150
_TOKENS_PER_TURN = 2 * _TOKENS_PER_CALL
_TURN_TEXT = "read the todos and list the workspace"
_TURN_TIMEOUT = 180.0
_NEWCOMER_FIRST, _NEWCOMER_GAP = 0.5, 1.0


def _options(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench streaming_load", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--chats", type=int, default=100, help="turns in the load (100)")
    parser.add_argument(
        "--arrivals",
        default=",".join(ARRIVALS),
        help="comma-separated arrival patterns, one load each: burst, spread (both)",
    )
    parser.add_argument(
        "--spread", type=float, default=2.0, help="seconds the spread arrivals span (2)"
    )
    parser.add_argument(
        "--newcomers", type=int, default=5, help="turns started one by one mid-load (5)"
    )
    parser.add_argument("--alone", type=int, default=3, help="baseline turns run alone (3)")
    parser.add_argument(
        "--model-latency",
        type=float,
        default=0.0,
        metavar="MS",
        help="the model's own wait before it answers each call, in ms (0)",
    )
    options = parser.parse_args(argv)
    options.arrivals = [p.strip() for p in options.arrivals.split(",") if p.strip()]
    for pattern in options.arrivals:
        if pattern not in ARRIVALS:
            parser.error(f"unknown arrival pattern {pattern!r}: use {', '.join(ARRIVALS)}")
    if options.chats < 2 or options.alone < 1:
        parser.error("--chats needs at least 2 and --alone at least 1")
    if options.model_latency < 0:
        parser.error("--model-latency cannot be negative")
    return options


def _paced_model(latency_ms: float = 0.0) -> tuple[subprocess.Popen[str], str]:
    return paced_model_start(_TOKENS_PER_SECOND, _TOKENS_PER_CALL, latency_ms / 1000)


async def _alone(url: str, seats: list[ChatSeat], label: str = "alone") -> Turns:
    turns = Turns(label, TOOLS_PER_TURN)
    for seat in seats:
        try:
            outcome: TurnRecord | BaseException = await chat_turn(
                url, seat, _TURN_TEXT, timeout=_TURN_TIMEOUT, model=MODEL
            )
        except Exception as exc:
            outcome = exc
        turns.add(seat, outcome)
    return turns


class _StartCpu:
    """The server's CPU from the first send until every load turn had its first token
    (all its threads, in nanoseconds: clock ticks are too coarse for a window this short)."""

    def __init__(self, pid: int) -> None:
        self._pid, self._begin = pid, 0
        self.seconds: float | None = None

    def begin(self) -> None:
        self._begin = process_threads_cpu_ns(self._pid)

    def end(self) -> None:
        self.seconds = (process_threads_cpu_ns(self._pid) - self._begin) / 1e9


async def _together(
    url: str,
    seats: list[ChatSeat],
    *,
    server_pid: int,
    offsets: list[float] | None = None,
    newcomers: list[ChatSeat] | None = None,
    windows: tuple[CpuWindow, ...] = (),
    label: str = "burst",
) -> tuple[Turns, Turns, float | None, int]:
    """Run ``seats`` as one load (sent at ``offsets`` after all connect) and the newcomers.

    Returns the load's turns, the newcomers', the server CPU seconds until every load
    turn had its first token (None if some never did), and when that was (time_ns).
    ``windows`` all start at the first send; the first stops when the load's last turn
    ends (the load's own span: newcomers that outlast it would dilute its share of a
    core), the others when the newcomers' do too (all the CPU, for the per-turn figures).
    """
    newcomers = newcomers or []
    start = StartLine(len(seats) + len(newcomers))
    start_cpu = _StartCpu(server_pid)
    tokens = FirstTokens(len(seats), start_cpu.end)
    load = [
        chat_turn(
            url,
            seat,
            _TURN_TEXT,
            timeout=_TURN_TIMEOUT,
            model=MODEL,
            start=start,
            delay=delay,
            on_first_delta=tokens.arrived,
        )
        for seat, delay in zip(seats, offsets or [0.0] * len(seats), strict=True)
    ]
    late = [
        chat_turn(
            url,
            seat,
            _TURN_TEXT,
            timeout=_TURN_TIMEOUT,
            model=MODEL,
            start=NewcomerGate(start, tokens, after=_NEWCOMER_FIRST + i * _NEWCOMER_GAP),
        )
        for i, seat in enumerate(newcomers)
    ]
    load_running = asyncio.gather(*load, return_exceptions=True)
    late_running = asyncio.gather(*late, return_exceptions=True)
    await start.wait()  # waits first, so it wakes before any client sends
    for window in windows:
        window.start()
    start_cpu.begin()
    outcomes = await load_running
    if windows:
        windows[0].stop()  # the load's own window ends with its last turn
    late_outcomes = await late_running
    for window in windows[1:]:
        window.stop()
    turns, late_turns = Turns(label, TOOLS_PER_TURN), Turns(f"{label} newcomer", TOOLS_PER_TURN)
    for seat, outcome in zip(seats, outcomes, strict=True):
        turns.add(seat, outcome)
    for seat, outcome in zip(newcomers, late_outcomes, strict=True):
        late_turns.add(seat, outcome)
    return turns, late_turns, start_cpu.seconds, tokens.at_ns


def main(argv: list[str] | None = None) -> None:
    options = _options(sys.argv[1:] if argv is None else argv)
    chats, late = options.chats, options.newcomers
    per_load = chats + late
    model_proc, model_url = _paced_model(options.model_latency)
    loads: list[Load] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            server = make_server(
                Path(tmp),
                OPENPROGRAM_API_BASE=model_url,
                OPENPROGRAM_API_KEY="bench",
                OPENAI_API_KEY="bench",
                OPENPROGRAM_MODELS=MODEL,
            )
            server.create_users()
            seats = chat_seats_create(
                server, count=1 + options.alone + per_load * len(options.arrivals), model=MODEL
            )
            daphne_start(server)
            assert server.proc is not None
            pid = server.proc.pid
            pids = {SERVER: pid, MODEL_SERVER: model_proc.pid}
            try:
                asyncio.run(_alone(server.url, seats[:1]))  # the first call imports litellm
                alone_cpu = CpuWindow(pids)
                alone_cpu.start()
                lone = asyncio.run(_alone(server.url, seats[1 : 1 + options.alone]))
                alone_cpu.stop()
                alone = Alone(lone, options.alone, alone_cpu, process_rss_bytes(pid))
                rest = seats[1 + options.alone :]
                for index, pattern in enumerate(options.arrivals):
                    mine = rest[index * per_load : (index + 1) * per_load]
                    span, cpu = CpuWindow(pids), CpuWindow(pids)
                    turns, newcomers, start_cpu, all_at = asyncio.run(
                        _together(
                            server.url,
                            mine[:chats],
                            server_pid=pid,
                            offsets=arrival_offsets(pattern, chats, window=options.spread),
                            newcomers=mine[chats:],
                            windows=(span, cpu),
                            label=pattern,
                        )
                    )
                    by_then = turns.pieces_before(all_at) + newcomers.pieces_before(all_at)
                    loads.append(
                        Load(
                            pattern,
                            turns,
                            newcomers,
                            span,
                            cpu,
                            start_cpu,
                            by_then,
                            process_peak_rss_bytes(pid),
                        )
                    )
            finally:
                server.stop()
    finally:
        if model_proc.stdin is not None:
            model_proc.stdin.close()
        model_proc.wait(timeout=10)
    heads = {
        "burst": f"{chats} at once (burst)",
        "spread": f"{chats} spread over {options.spread:g} s",
    }
    print_table(
        f"Streaming load: {chats} simultaneous chats, {_TOKENS_PER_TURN} text pieces at "
        f"{_TOKENS_PER_SECOND}/s + {TOOLS_PER_TURN} tool calls per turn, through HTTP and "
        "litellm, one daphne process"
        + (
            f", the model answering {options.model_latency:g} ms after each call"
            if options.model_latency
            else ""
        ),
        ["measure", f"turn alone ({options.alone})", *(heads[x.pattern] for x in loads), "target"],
        rows(alone, loads, chats=chats, late=late, pieces_per_turn=_TOKENS_PER_TURN),
    )
    failures = alone.turns.failures + [
        line for load in loads for line in load.turns.failures + load.newcomers.failures
    ]
    if failures:
        print(f"WARNING: {len(failures)} turn(s) did not complete:", flush=True)
        for line in failures[:20]:
            print(f"  {line}", flush=True)


if __name__ == "__main__":
    main()
