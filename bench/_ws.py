"""Drive real chats over a real daphne server's WebSockets, for the benchmarks.

Sessions and conversations are created in the server's own database through
``manage.py shell`` (one subprocess for all of them), then the client opens
``/ws/chat/<id>/`` with the session cookie and a same-origin ``Origin`` header,
exactly as the browser does. All traffic stays on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from bench._wsclient import ws_connect
from tests.servers import ROOT, DaphneServer, wait_for_http

__all__ = [
    "ECHO_APP",
    "STAMP_PREFIX",
    "ChatSeat",
    "Gate",
    "StartLine",
    "TurnIncomplete",
    "TurnRecord",
    "chat_seats_create",
    "chat_turn",
    "daphne_start",
    "echo_round_trips",
    "frame_kind",
    "percentile",
]

STAMP_PREFIX = "t="
"""Starts each line of ``bench._stream_tool``'s updates; the rest is ``time.time_ns()``."""

ECHO_APP = "bench.echo_asgi:application"
"""The product's application plus a bare echo consumer at /ws/echo/ (bench only)."""

_SETUP_CODE = """
import json
import statistics
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client
from chat_app.services import conversation_create
seats = []
for name in {users!r}:
    user = get_user_model().objects.get(username=name)
    client = Client()
    client.force_login(user)
    cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
    seats.append((name, settings.SESSION_COOKIE_NAME + "=" + cookie))
out = []
for i in range({count}):
    name, cookie = seats[i % len(seats)]
    user = get_user_model().objects.get(username=name)
    conversation = conversation_create(owner=user, title="bench " + str(i), model="offline")
    out.append({{"user": name, "cookie_header": cookie, "conversation_id": str(conversation.public_id)}})
print("SEATS=" + json.dumps(out))
"""


@dataclass(frozen=True)
class ChatSeat:
    """One conversation a bench client may chat in, with its owner's session cookie."""

    user: str
    cookie_header: str
    """``name=value`` of the owner's session cookie, ready for a Cookie header."""
    conversation_id: str
    """The conversation's public id, as in its URLs."""


@dataclass
class TurnRecord:
    """What one turn looked like from the client's side of the socket."""

    seconds: float
    stop_reason: str
    raw_frames: list[str] = field(default_factory=list)
    """The frames as they arrived (JSON text), decoded only when ``frames`` is read."""
    received_ns: list[int] = field(default_factory=list)
    """``time.time_ns()`` when each frame in ``raw_frames`` arrived."""
    finished_frame: bool = False
    """Whether the ``turn_finished`` frame itself arrived."""
    sent_ns: int = 0
    """``time.time_ns()`` when the message was sent."""
    _decoded: list[dict[str, Any]] | None = field(default=None, repr=False)

    @property
    def frames(self) -> list[dict[str, Any]]:
        """The frames, decoded. Left for after the turn, so the load's clients stay cheap."""
        if self._decoded is None or len(self._decoded) != len(self.raw_frames):
            self._decoded = [json.loads(raw) for raw in self.raw_frames]
        return self._decoded


class Gate(Protocol):
    """What a client waits at before sending: it arrives once connected, then waits."""

    def arrive(self) -> None: ...

    async def wait(self) -> None: ...


class StartLine:
    """Holds ``count`` clients until each has connected (or failed to), then lets all go."""

    def __init__(self, count: int) -> None:
        self._waiting = count
        self._go = asyncio.Event()

    def arrive(self) -> None:
        self._waiting -= 1
        if self._waiting <= 0:
            self._go.set()

    async def wait(self) -> None:
        await self._go.wait()


class TurnIncomplete(Exception):
    """A turn whose last frame never came: how far it got, and why the client gave up."""

    def __init__(self, reason: str, record: TurnRecord, *, connected: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.record = record
        self.connected = connected

    def describe(self) -> str:
        if not self.connected:
            return f"{self.reason} before the socket opened"
        kinds = [frame.get("type") for frame in self.record.frames]
        last = kinds[-1] if kinds else "none"
        finished = "seen" if self.record.finished_frame else "never arrived"
        return f"{self.reason} after {len(kinds)} frame(s), last {last!r}, turn_finished {finished}"


def chat_seats_create(
    server: DaphneServer,
    *,
    count: int,
    users: tuple[str, ...] = ("alice", "bob"),
    model: str = "offline",
) -> list[ChatSeat]:
    """``count`` fresh conversations with ``model``, spread over ``users`` (who must exist)."""
    code = _SETUP_CODE.replace('model="offline"', f"model={model!r}")
    code = code.format(users=list(users), count=count)
    output = server.shell(code)
    line = next(row for row in output.splitlines() if row.startswith("SEATS="))
    return [ChatSeat(**seat) for seat in json.loads(line.removeprefix("SEATS="))]


def daphne_start(server: DaphneServer, *, app: str = ECHO_APP) -> None:
    """Like ``server.start()``, but serving ``app``; ``server.stop()`` still stops it."""
    server.log_path = server.home / f"daphne-{server.port}.log"
    with open(server.log_path, "w") as log:
        server.proc = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "daphne"),
                "-b",
                "127.0.0.1",
                "-p",
                str(server.port),
                app,
            ],
            cwd=ROOT,
            env=server.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    wait_for_http(server.url + "/healthz", proc=server.proc)


def _connect(base_url: str, path: str, cookie_header: str) -> Any:
    from websockets.asyncio.client import connect
    from websockets.typing import Origin

    return connect(
        base_url.replace("http://", "ws://") + path,
        origin=Origin(base_url),
        additional_headers={"Cookie": cookie_header},
        proxy=None,
        open_timeout=30,
        max_size=16 * 1024 * 1024,
    )


def frame_kind(raw: str | bytes) -> str:
    """A frame's ``type`` without decoding all of it when it comes first (as the server sends)."""
    if isinstance(raw, str) and raw.startswith(_TYPE_FIRST):
        end = raw.find('"', len(_TYPE_FIRST))
        if end > 0:
            return raw[len(_TYPE_FIRST) : end]
    return str(json.loads(raw).get("type", ""))


_TYPE_FIRST = '{"type": "'
_OPEN_TIMEOUT = 30.0


class _TurnReader:
    """Reads a turn's frames as they arrive (a :func:`ws_connect` callback), until its last."""

    def __init__(self, record: TurnRecord, on_first_delta: Callable[[], None] | None) -> None:
        self.record = record
        self.on_first_delta = on_first_delta
        self.started = 0.0
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def message(self, raw: str | bytes, arrived_ns: int) -> None:
        if self.done.done():
            return
        try:
            self._frame(raw, arrived_ns)
        except Exception as exc:  # a frame the bench cannot read ends the turn, with the reason
            self.done.set_exception(exc)

    def _frame(self, raw: str | bytes, arrived_ns: int) -> None:
        kind = frame_kind(raw)
        if kind == "catch_up":
            return
        record = self.record
        record.raw_frames.append(raw)  # type: ignore[arg-type]  # the server sends text
        record.received_ns.append(arrived_ns)
        if kind == "text_delta":
            if self.on_first_delta is not None:
                self.on_first_delta()
                self.on_first_delta = None
        elif kind == "turn_finished":
            record.seconds = time.perf_counter() - self.started
            record.stop_reason = json.loads(raw).get("stop_reason", "")
            record.finished_frame = True
        elif kind == "assistant_message" or (kind == "error" and "run_id" not in json.loads(raw)):
            if not record.finished_frame:
                record.seconds = time.perf_counter() - self.started
                record.stop_reason = json.loads(raw).get("status", "error")
            self.done.set_result(None)


async def chat_turn(
    base_url: str,
    seat: ChatSeat,
    text: str,
    *,
    timeout: float = 60.0,
    model: str = "offline",
    start: Gate | None = None,
    delay: float = 0.0,
    on_first_delta: Callable[[], None] | None = None,
) -> TurnRecord:
    """Send one message to ``model`` and read frames until the turn's last one.

    The last frame is ``assistant_message`` (the stored reply, sent after
    ``turn_finished``), or an ``error`` frame that belongs to no run (the socket
    refused the message). ``seconds`` runs from the send, after connect and
    catch-up, to ``turn_finished`` (to the last frame if ``turn_finished`` never
    came: then ``finished_frame`` is False). No last frame within ``timeout``, a
    socket that fails to open or closes mid-turn raise :class:`TurnIncomplete`
    with the frames that did arrive. With ``start``, the message is sent once every
    client of that start line has connected (``start.wait()`` returns), ``delay``
    seconds after (arrivals spread over time). ``on_first_delta`` is called when the
    first ``text_delta`` frame arrives.

    The socket is :mod:`bench._wsclient`'s: frames are read in the callback that
    receives them, kept as text, and only their type is looked at while the turn runs
    (a load's 100 clients share the machine with the server they time).
    """
    path = f"/ws/chat/{seat.conversation_id}/"
    record = TurnRecord(seconds=0.0, stop_reason="")
    reader = _TurnReader(record, on_first_delta)
    try:
        socket = await asyncio.wait_for(
            ws_connect(
                base_url.replace("http://", "ws://") + path,
                on_message=reader.message,
                headers={"Origin": base_url, "Cookie": seat.cookie_header},
            ),
            _OPEN_TIMEOUT,
        )
    except Exception as exc:
        if start is not None:
            start.arrive()
        raise TurnIncomplete(f"{type(exc).__name__}: {exc}", record, connected=False) from exc
    try:
        if start is not None:
            start.arrive()
            await start.wait()
        if delay > 0:
            await asyncio.sleep(delay)
        frame = {"type": "user_message", "text": text, "model": model}
        reader.started = time.perf_counter()
        record.sent_ns = time.time_ns()
        socket.send_text(json.dumps(frame))
        await asyncio.wait(
            (reader.done, socket.closed), timeout=timeout, return_when=asyncio.FIRST_COMPLETED
        )
        if reader.done.done():
            reader.done.result()  # raises what a frame raised
            return record
        if socket.closed.done():
            reason = f"socket closed (code {socket.close_code!r})"
        else:
            reason = f"no last frame within {timeout:.0f} s"
    except Exception as exc:
        reason = f"{type(exc).__name__}: {exc}"
    finally:
        await socket.close()
    raise TurnIncomplete(reason, record, connected=True)


async def echo_round_trips(
    base_url: str, *, count: int, payload: str = "ping", timeout: float = 30.0
) -> list[float]:
    """Seconds per round trip through the bench echo consumer, ``count`` times on one socket."""
    samples: list[float] = []
    async with _connect(base_url, "/ws/echo/", "") as socket:
        async with asyncio.timeout(timeout):
            for _ in range(count):
                started = time.perf_counter()
                await socket.send(payload)
                reply = await socket.recv()
                samples.append(time.perf_counter() - started)
                if reply != payload:
                    raise ValueError(f"echo consumer answered {reply!r}, expected {payload!r}")
    return samples


def percentile(values: list[float], q: int) -> float:
    """The ``q``-th percentile (1..99) of ``values``, interpolated; needs two or more values."""
    if len(values) < 2:
        raise ValueError(f"need at least 2 samples for a percentile, got {len(values)!r}")
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]
