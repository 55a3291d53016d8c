"""The streaming load's floor: what its rig alone allows the burst's time to first token.

The streaming load (``bench_streaming_load``) times 100 turns sent in one instant from
their first send to their first ``text_delta``. Part of that is not the server's: the
fake model server (``bench._paced_model``, its own process) must accept and answer 100
requests, and the bench's 100 clients (``bench._wsclient``, one process) must send and
read 100 sockets, all on the same 2 cores. Measured here without any chat server work:

- **model server**: ``--chats`` simultaneous streaming requests from one aiohttp client
  process (as daphne sends them: same library, a pooled connector, a request body the
  size of a turn's first model call) straight to the paced fake model; time from each
  POST to its first stamped text piece, against one request alone. Its stamp says when
  the fake server wrote the piece, so the time is split into *request out* (POST until
  the fake server started the stream; its first piece then waits one pacing gap) and
  *back* (piece written until read);
- **WebSocket echo**: ``--chats`` bench clients connected to daphne's bare echo consumer
  (``bench.echo_asgi``: no login, no database, no turn) send a message the size of a
  chat's ``user_message`` in one instant; time from each send to its echo;
- **forward only**: the same clients on daphne's ``/ws/first-piece/`` (``bench.echo_asgi``),
  which turns each message into the model call above and sends its first piece back as
  a ``text_delta`` frame: the chat's whole path to a first token, with no turn work.

The table gives each against the same thing alone, the CPU each process spent per
request, and what is left for the server's own work per turn start if the burst is to
meet "time to first token p95 ≤ 2x the same turn alone" (the issue's target).
``python -m bench burst_floor --chats 100 --alone 5``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from bench._paced_model import MODEL
from bench._proc import process_threads_cpu_ns
from bench._util import print_table
from bench._ws import StartLine, daphne_start, percentile
from bench._wsclient import ws_connect
from bench.bench_streaming_load import _paced_model
from tests.fakes.openai_server import STAMP_PREFIX
from tests.servers import make_server

__all__ = ["first_piece_text", "main", "request_body"]

_GAP_MS = 1000 / 50  # the paced model's first piece comes one gap after the stream starts
_BODY_TOOLS = 11
"""A turn's first model call sends 11 tool schemas (~11.6 KB): the same size here."""
_FRAME = json.dumps({"type": "user_message", "text": "read the todos and list the workspace"})


def request_body() -> bytes:
    """A streaming chat request the size and shape of a turn's first model call."""
    tools = [
        {
            "type": "function",
            "function": {
                "name": f"tool_{index}",
                "description": "Does one thing a chat turn may need. " * 12,
                "parameters": {
                    "type": "object",
                    "properties": {
                        name: {"type": "string", "description": f"the {name} to use " * 4}
                        for name in ("path", "pattern", "text", "limit")
                    },
                    "required": ["path"],
                },
            },
        }
        for index in range(_BODY_TOOLS)
    ]
    body = {
        "model": MODEL.removeprefix("openai/"),
        "messages": [
            {"role": "system", "content": "You are OpenProgram, a helpful assistant."},
            {"role": "user", "content": "read the todos and list the workspace"},
        ],
        "tools": tools,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    return json.dumps(body).encode()


async def first_piece_text(session: aiohttp.ClientSession, url: str, body: bytes) -> str:
    """POST one streaming call and read until its first stamped piece: ``t=<ns>``."""
    prefix = STAMP_PREFIX.encode()
    async with session.post(
        url, data=body, headers={"Content-Type": "application/json"}
    ) as response:
        seen = b""
        async for chunk in response.content.iter_any():
            seen += chunk
            at = seen.find(prefix)
            end = seen.find(b" ", at) if at >= 0 else -1
            if end > 0:
                return seen[at:end].decode()
    raise RuntimeError("the paced model's stream ended before a stamped piece")


def _stamp(text: str) -> int:
    return int(text.removeprefix(STAMP_PREFIX))


class _Window:
    """CPU of the watched processes (nanoseconds, all their threads) and of this one
    from ``go`` (every client ready) until ``stop``."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids, self.began, self.used = pids, {}, {}

    def _now(self) -> dict[str, float]:
        now = {label: process_threads_cpu_ns(pid) / 1e9 for label, pid in self.pids.items()}
        return {**now, "clients": time.process_time()}

    def go(self) -> None:
        self.began = self._now()

    def stop(self) -> None:
        now = self._now()
        self.used = {label: now[label] - self.began[label] for label in now}

    def ms_per(self, label: str, count: int) -> float:
        return self.used[label] * 1000 / count


class _Line(StartLine):
    def __init__(self, count: int, window: _Window) -> None:
        super().__init__(count)
        self._window = window

    def arrive(self) -> None:
        super().arrive()
        if self._go.is_set() and not self._window.began:
            self._window.go()


async def _model_calls(url: str, *, count: int, together: bool, window: _Window) -> list[Any]:
    """(sent, stamp, read) time_ns per call: ``count`` at once, or one after another."""
    body = request_body()
    calls: list[tuple[int, int, int]] = []

    async def one(session: aiohttp.ClientSession) -> None:
        sent = time.time_ns()
        text = await first_piece_text(session, url, body)
        calls.append((sent, _stamp(text), time.time_ns()))

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        window.go()
        if together:
            await asyncio.gather(*(one(session) for _ in range(count)))
        else:
            for _ in range(count):
                await one(session)
        window.stop()
    return calls


async def _socket_round(
    url: str, path: str, *, count: int, together: bool, window: _Window
) -> list[Any]:
    """(sent, reply text, replied) per client of daphne's ``path``: ``count`` clients
    sending at once (CPU from the moment all are connected), or one after another."""
    socket_url = url.replace("http://", "ws://") + path
    replies: list[tuple[int, str, int]] = []

    async def one(start: StartLine | None) -> None:
        answered: asyncio.Future[tuple[str, int]] = asyncio.get_running_loop().create_future()

        def message(raw: str | bytes, arrived_ns: int) -> None:
            if not answered.done():
                text = raw if isinstance(raw, str) else raw.decode()
                answered.set_result((json.loads(text).get("text", ""), arrived_ns))

        socket = await ws_connect(socket_url, on_message=message, headers={"Origin": url})
        try:
            if start is not None:
                start.arrive()
                await start.wait()
            sent = time.time_ns()
            socket.send_text(_FRAME)
            text, arrived = await asyncio.wait_for(answered, 30)
            replies.append((sent, text, arrived))
        finally:
            await socket.close()

    if together:
        line = _Line(count, window)
        await asyncio.gather(*(one(line) for _ in range(count)))
        window.stop()
    else:
        window.go()
        for _ in range(count):
            await one(None)
        window.stop()
    return replies


def _ms(values: list[float], q: int) -> str:
    return f"{percentile(values, q):.0f}"


def _first(calls: list[Any]) -> list[float]:
    """POST → first piece read, ms."""
    return [(read - sent) / 1e6 for sent, _, read in calls]


def _out(calls: list[Any]) -> list[float]:
    """Send → the fake model started the stream (its first piece comes one gap later), ms."""
    return [(stamp - sent) / 1e6 - _GAP_MS for sent, stamp, _ in calls]


def _back(calls: list[Any]) -> list[float]:
    return [(read - stamp) / 1e6 for _, stamp, read in calls]


def _stamped(replies: list[Any]) -> list[Any]:
    """A socket round's replies as model calls: (sent, the first piece's stamp, read)."""
    return [(sent, _stamp(text), arrived) for sent, text, arrived in replies]


_Round = tuple[list[Any], _Window]


def _runs(values: list[str]) -> str:
    return ", ".join(values)


def _model_rows(lone: _Round, bursts: list[_Round], alone: int, chats: int) -> list[list[object]]:
    calls = lone[0]
    alone_ms = statistics.median(_first(calls))
    return [
        ["**model server** (one aiohttp client process → the paced fake model)", "", ""],
        [
            "POST → first piece p50 / p95 (ms)",
            f"{alone_ms:.1f}",
            _runs([f"{_ms(_first(c), 50)} / {_ms(_first(c), 95)}" for c, _ in bursts]),
        ],
        [
            "p95 as a multiple of alone",
            "1×",
            _runs([f"{percentile(_first(c), 95) / alone_ms:.1f}×" for c, _ in bursts]),
        ],
        [
            "of which request out p95: POST → the stream started (ms)",
            f"{statistics.median(_out(calls)):.1f}",
            _runs([_ms(_out(c), 95) for c, _ in bursts]),
        ],
        [
            "of which back p95: piece written → read (ms)",
            f"{statistics.median(_back(calls)):.1f}",
            _runs([f"{percentile(_back(c), 95):.1f}" for c, _ in bursts]),
        ],
        _cpu_row("fake model server CPU per request (ms)", "model", lone, bursts, alone, chats),
        _cpu_row("the HTTP client's CPU per request (ms)", "clients", lone, bursts, alone, chats),
    ]


def _socket_rows(
    title: str, lone: _Round, bursts: list[_Round], alone: int, chats: int, *, model: bool
) -> list[list[object]]:
    def took(replies: list[Any]) -> list[float]:
        return [(arrived - sent) / 1e6 for sent, _, arrived in replies]

    alone_ms = statistics.median(took(lone[0]))
    rows: list[list[object]] = [
        [title, "", ""],
        [
            "send → reply p50 / p95 (ms)",
            f"{alone_ms:.1f}",
            _runs([f"{_ms(took(c), 50)} / {_ms(took(c), 95)}" for c, _ in bursts]),
        ],
    ]
    if model:
        rows += [
            [
                "p95 as a multiple of alone",
                "1×",
                _runs([f"{percentile(took(c), 95) / alone_ms:.1f}×" for c, _ in bursts]),
            ],
            [
                "of which request out p95: send → the stream started (ms)",
                f"{statistics.median(_out(_stamped(lone[0]))):.1f}",
                _runs([_ms(_out(_stamped(c)), 95) for c, _ in bursts]),
            ],
            _cpu_row("fake model server CPU per request (ms)", "model", lone, bursts, alone, chats),
        ]
    return [
        *rows,
        _cpu_row(
            "daphne CPU per message, from the first send (ms)", "daphne", lone, bursts, alone, chats
        ),
        _cpu_row(
            "the bench clients' CPU per message, from the first send (ms)",
            "clients",
            lone,
            bursts,
            alone,
            chats,
        ),
    ]


def _cpu_row(
    measure: str, label: str, lone: _Round, bursts: list[_Round], alone: int, chats: int
) -> list[object]:
    return [
        measure,
        f"{lone[1].ms_per(label, alone):.2f}",
        _runs([f"{window.ms_per(label, chats):.2f}" for _, window in bursts]),
    ]


def _model_round(url: str, pids: dict[str, int], *, count: int, together: bool) -> _Round:
    window = _Window(pids)
    return asyncio.run(_model_calls(url, count=count, together=together, window=window)), window


def _socket_round_cpu(
    url: str, path: str, pids: dict[str, int], *, count: int, together: bool
) -> _Round:
    window = _Window(pids)
    replies = asyncio.run(_socket_round(url, path, count=count, together=together, window=window))
    return replies, window


_SOCKETS = (
    ("/ws/echo/", "**WebSocket echo** (bench clients → daphne's bare echo consumer)", False),
    (
        "/ws/first-piece/",
        "**forward only** (bench clients → daphne → the fake model → back; no turn work)",
        True,
    ),
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench burst_floor", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--chats", type=int, default=100, help="requests in the burst (100)")
    parser.add_argument("--alone", type=int, default=5, help="requests one after another (5)")
    parser.add_argument("--rounds", type=int, default=3, help="bursts of each kind (3)")
    options = parser.parse_args(sys.argv[1:] if argv is None else argv)
    chats, alone, rounds = options.chats, options.alone, options.rounds

    model_proc, model_url = _paced_model()
    url = model_url + "/chat/completions"
    try:
        pids = {"model": model_proc.pid}
        _model_round(url, pids, count=2, together=False)  # both processes warm
        lone = _model_round(url, pids, count=alone, together=False)
        bursts = [_model_round(url, pids, count=chats, together=True) for _ in range(rounds)]
        rows = _model_rows(lone, bursts, alone, chats)
        with tempfile.TemporaryDirectory() as tmp:
            server = make_server(Path(tmp), OPENPROGRAM_API_BASE=model_url)
            daphne_start(server)
            assert server.proc is not None
            pids = {"daphne": server.proc.pid, "model": model_proc.pid}
            try:
                for path, title, model in _SOCKETS:
                    _socket_round_cpu(server.url, path, pids, count=2, together=False)
                    lone = _socket_round_cpu(server.url, path, pids, count=alone, together=False)
                    bursts = [
                        _socket_round_cpu(server.url, path, pids, count=chats, together=True)
                        for _ in range(rounds)
                    ]
                    rows += _socket_rows(title, lone, bursts, alone, chats, model=model)
            finally:
                server.stop()
    finally:
        if model_proc.stdin is not None:
            model_proc.stdin.close()
        model_proc.wait(timeout=10)
    print_table(
        f"The streaming load's rig and transport alone: {chats} at once ({rounds} bursts, "
        f"each) against one at a time ({alone}, median)",
        ["measure", "alone", f"{chats} at once"],
        rows,
    )


if __name__ == "__main__":
    main()
