"""Streaming load: 100 simultaneous chats with a model that streams like a real one.

A fake OpenAI-compatible server in its own process (``bench._paced_model``) streams
every model call through real HTTP and litellm at 50 text pieces a second, each piece
a stamp of when it was sent; a turn is two calls of 150 pieces (300 in all) with two
tool calls (``todo_read``, ``list_dir``) between them. One daphne process (SQLite)
serves the chats. First the same turn runs alone a few times (the baseline), then 100
clients connect and all send at once.

Reported: pieces delivered (every stamp must reach its socket), time to first token
(send → first ``text_delta`` frame) at p50/p95 against the turn alone, the latency
each piece added between the model server writing it and the browser socket reading
it (one machine, one clock), the server's CPU (``/proc``, all threads) per turn and as
a share of one core over the load, and its resident memory.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench._paced_model import MODEL, TOOLS_PER_TURN
from bench._proc import process_cpu_seconds, process_peak_rss_bytes, process_rss_bytes
from bench._util import print_table
from bench._ws import (
    ChatSeat,
    StartLine,
    TurnIncomplete,
    TurnRecord,
    chat_seats_create,
    chat_turn,
    daphne_start,
    percentile,
)
from tests.fakes.openai_server import STAMP_PREFIX
from tests.servers import ROOT, make_server

__all__ = ["main"]

_CHATS = 100
_TOKENS_PER_SECOND = 50
_TOKENS_PER_CALL = 150
_TOKENS_PER_TURN = 2 * _TOKENS_PER_CALL
_ALONE_TURNS = 3
_TURN_TEXT = "read the todos and list the workspace"
_TURN_TIMEOUT = 180.0
_MIB = 1024 * 1024


@dataclass
class _Turns:
    """What the clients saw of a set of turns."""

    completed: int = 0
    pieces: int = 0
    first_token_ms: list[float] = field(default_factory=list)
    piece_latency_ms: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def add(self, seat: ChatSeat, outcome: TurnRecord | BaseException) -> None:
        if not isinstance(outcome, TurnRecord):
            story = outcome.describe() if isinstance(outcome, TurnIncomplete) else repr(outcome)
            self.failures.append(f"conversation {seat.conversation_id}: {story}")
            return
        finished = [f for f in outcome.frames if f.get("type") == "tool_finished"]
        if outcome.stop_reason == "completed" and len(finished) == TOOLS_PER_TURN:
            self.completed += 1
        else:
            self.failures.append(
                f"conversation {seat.conversation_id}: ended {outcome.stop_reason!r} with "
                f"{len(finished)} of {TOOLS_PER_TURN} tool results"
            )
        first = True
        for frame, arrived_ns in zip(outcome.frames, outcome.received_ns, strict=True):
            if frame.get("type") != "text_delta":
                continue
            if first:
                self.first_token_ms.append((arrived_ns - outcome.sent_ns) / 1e6)
                first = False
            for line in frame["text"].splitlines():
                if line.startswith(STAMP_PREFIX):
                    self.pieces += 1
                    sent_ns = int(line.removeprefix(STAMP_PREFIX))
                    self.piece_latency_ms.append((arrived_ns - sent_ns) / 1e6)


def _paced_model() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "bench._paced_model"),
            *(str(_TOKENS_PER_SECOND), str(_TOKENS_PER_CALL)),
        ],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("URL="):
        proc.kill()
        raise RuntimeError(f"the paced model server did not start: {line!r}")
    return proc, line.removeprefix("URL=").strip()


async def _alone(url: str, seats: list[ChatSeat]) -> _Turns:
    turns = _Turns()
    for seat in seats:
        try:
            outcome: TurnRecord | BaseException = await chat_turn(
                url, seat, _TURN_TEXT, timeout=_TURN_TIMEOUT, model=MODEL
            )
        except Exception as exc:
            outcome = exc
        turns.add(seat, outcome)
    return turns


async def _together(url: str, seats: list[ChatSeat]) -> _Turns:
    start = StartLine(len(seats))
    outcomes = await asyncio.gather(
        *(
            chat_turn(url, seat, _TURN_TEXT, timeout=_TURN_TIMEOUT, model=MODEL, start=start)
            for seat in seats
        ),
        return_exceptions=True,
    )
    turns = _Turns()
    for seat, outcome in zip(seats, outcomes, strict=True):
        turns.add(seat, outcome)
    return turns


def _p(values: list[float], q: int) -> str:
    return f"{percentile(values, q):.0f}" if len(values) >= 2 else "n/a"


def main() -> None:
    model_proc, model_url = _paced_model()
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
            seats = chat_seats_create(server, count=1 + _ALONE_TURNS + _CHATS, model=MODEL)
            daphne_start(server)
            assert server.proc is not None
            pid = server.proc.pid
            try:
                asyncio.run(_alone(server.url, seats[:1]))  # the first call imports litellm
                alone = asyncio.run(_alone(server.url, seats[1 : 1 + _ALONE_TURNS]))
                rss_before = process_rss_bytes(pid)
                cpu_before, started = process_cpu_seconds(pid), time.perf_counter()
                load = asyncio.run(_together(server.url, seats[1 + _ALONE_TURNS :]))
                wall = time.perf_counter() - started
                cpu = process_cpu_seconds(pid) - cpu_before
                rss_after, rss_peak = process_rss_bytes(pid), process_peak_rss_bytes(pid)
            finally:
                server.stop()
    finally:
        if model_proc.stdin is not None:
            model_proc.stdin.close()
        model_proc.wait(timeout=10)
    alone_ttft = statistics.median(alone.first_token_ms) if alone.first_token_ms else 0.0
    load_p95 = percentile(load.first_token_ms, 95) if len(load.first_token_ms) >= 2 else 0.0
    print_table(
        f"Streaming load: {_CHATS} simultaneous chats, {_TOKENS_PER_TURN} text pieces at "
        f"{_TOKENS_PER_SECOND}/s + {TOOLS_PER_TURN} tool calls per turn, through HTTP and "
        "litellm, one daphne process",
        ["measure", "turn alone", f"{_CHATS} at once", "target"],
        [
            [
                "turns completed",
                f"{alone.completed} of {_ALONE_TURNS}",
                f"{load.completed} of {_CHATS}",
                "all",
            ],
            [
                "text pieces delivered",
                f"{alone.pieces} of {_ALONE_TURNS * _TOKENS_PER_TURN}",
                f"{load.pieces} of {_CHATS * _TOKENS_PER_TURN}",
                "all",
            ],
            ["time to first token p50 (ms)", f"{alone_ttft:.0f}", _p(load.first_token_ms, 50), ""],
            [
                "time to first token p95 (ms)",
                _p(alone.first_token_ms, 95),
                f"{load_p95:.0f} ({load_p95 / alone_ttft:.2f}× alone)" if alone_ttft else "n/a",
                "≤ 2× alone",
            ],
            [
                "added latency per piece p50 (ms)",
                _p(alone.piece_latency_ms, 50),
                _p(load.piece_latency_ms, 50),
                "",
            ],
            [
                "added latency per piece p99 (ms)",
                _p(alone.piece_latency_ms, 99),
                _p(load.piece_latency_ms, 99),
                "≤ 50",
            ],
            [
                "server CPU per turn (ms)",
                "",
                f"{cpu * 1000 / _CHATS:.0f}",
                "",
            ],
            [
                "server CPU over the load (% of one core)",
                "",
                f"{100 * cpu / wall:.0f} % over {wall:.1f} s",
                "≤ 50 %",
            ],
            [
                "server resident memory (MiB)",
                f"{rss_before / _MIB:.0f}",
                f"{rss_after / _MIB:.0f} (peak {rss_peak / _MIB:.0f})",
                "",
            ],
        ],
    )
    failures = alone.failures + load.failures
    if failures:
        print(f"WARNING: {len(failures)} turn(s) did not complete:", flush=True)
        for line in failures[:20]:
            print(f"  {line}", flush=True)


if __name__ == "__main__":
    main()
