"""Every place OpenProgram relies on a private part of daphne, autobahn or Twisted.

Nothing else in the tree touches a library's private attribute (ruff's ``SLF001`` is on,
with a per-file exception for this module only). Each patch below says what it changes
and why no public API does it. :func:`install` runs when ``openprogram_site.asgi`` is
imported, in the daphne process before it listens: it first checks that every attribute
the patches rely on is still there (:data:`RELIED_ON`) and refuses to start, naming the
library and its version, when one is not. A release that keeps the names but changes
their meaning is caught by the tests (``tests/integration/site/test_daphne_patches.py``,
``test_trust_boundary.py``, ``test_request_body_limit.py``), which run against the locked
versions; :data:`VERIFIED` lists the versions they passed on, and a test fails when
``uv.lock`` holds another: re-verify this module, then add the version.

The patches:

- **Oversize WebSocket frames** (:func:`oversize_frames_answered`). daphne's own limit
  (``--websocket-max-message-size``, 1 MB) is enforced inside autobahn, whose
  ``_max_message_size_exceeded`` drops the TCP connection (``failByDrop``): the browser
  sees 1006 and no reason. Replaced on daphne's protocol class, the client gets the
  consumer's error frame and a close handshake with :data:`CLOSE_TOO_LARGE` (4413, as
  HTTP's 413; an ASGI application may only close with 1000 or 3000-4999).
- **Oversize HTTP bodies** (:func:`oversize_bodies_refused`). daphne (twisted.web) spools
  a whole request body to a temporary file before the application sees a byte and has no
  limit of its own, so anyone could fill the disk before login is checked. Three methods
  of daphne's request class are wrapped: a declared ``Content-Length`` over the limit is
  answered 413 when the headers arrive, a chunked body when it passes the limit; nothing
  of it is kept.
- **Relayed text frames written at once** (:class:`DirectTextFrames`, put in each
  WebSocket's scope by :class:`FrameWriterInScope` under ``core.socket_frames.FRAME_WRITER``).
  Through daphne's ASGI send a frame passes daphne's ``handle_reply``, autobahn's
  ``sendMessage`` → ``sendFrame`` → ``sendData`` (which formats a debug line's arguments
  on every frame, logging on or off) and Twisted's ``transport.write``, which never writes
  at once: it registers the socket with the reactor (an ``epoll_ctl``), writes on the
  loop's next turn through its logging context, then unregisters it (another). A
  streaming chat writes a frame to every tab about every 20 ms, and that path was what
  kept 100 streaming chats' event loop saturated (docs/decisions/direct-frames.md). The
  writer frames the text itself (RFC 6455, unmasked, as a server sends) and sends it on
  the socket when nothing of the connection waits in Twisted, else hands it to
  ``transport.write`` behind what waits, so the wire's order is the order of the calls.
  It replaces nothing in the libraries (it reads their state and writes through Twisted's
  own ``writeSomeData`` and ``write``), and declines (the caller uses the ASGI send)
  whenever the connection is not a plain open one: not daphne's send, TLS, not accepted yet or
  closing, compression negotiated, autobahn's own queue in use, frame logging on, a
  frame over daphne's size limit or autobahn's fragment size.
"""

from __future__ import annotations

import functools
import importlib.metadata
import inspect
import json
from typing import Any

from core.socket_frames import CLOSE_TOO_LARGE, FRAME_WRITER, too_large_frame

__all__ = [
    "RELIED_ON",
    "VERIFIED",
    "DirectTextFrames",
    "FrameWriterInScope",
    "PatchTargetMissing",
    "install",
    "missing_targets",
    "oversize_bodies_refused",
    "oversize_frames_answered",
]

VERIFIED: dict[str, tuple[str, ...]] = {
    "daphne": ("4.2.3",),
    "autobahn": ("26.11.1",),
    "twisted": ("26.10.0",),
}
"""Versions this module's patches were checked on (its tests passed against them)."""

RELIED_ON: dict[str, tuple[tuple[str, str, tuple[str, ...]], ...]] = {
    # library: (module, class, attributes): class attributes, or, for attributes set per
    # instance, ``self.<name> =`` or the quoted name (autobahn's options, set with
    # ``setattr`` from a list of names) in the source of the class or one of its bases.
    "daphne": (
        ("daphne.ws_protocol", "WebSocketProtocol", ("_max_message_size_exceeded", "transport")),
        ("daphne.http_protocol", "WebRequest", ("gotLength", "handleContentChunk", "process")),
        ("daphne.server", "Server", ("handle_reply", "connections")),
    ),
    "autobahn": (
        (
            "autobahn.websocket.protocol",
            "WebSocketProtocol",
            (
                "_max_message_size_exceeded",
                "_fail_connection",
                "sendMessage",
                "STATE_OPEN",
                "state",
                "failedByMe",
                "failByDrop",
                "send_queue",
                "logFrames",
                "logOctets",
                "maxMessagePayloadSize",
                "autoFragmentSize",
                "_perMessageCompress",
            ),
        ),
    ),
    "twisted": (
        ("twisted.web.http", "Request", ("content", "channel")),
        (
            "twisted.internet.tcp",
            "Server",
            (
                "connected",
                "disconnecting",
                "_tempDataLen",
                "dataBuffer",
                "offset",
                "writeSomeData",
                "write",
            ),
        ),
    ),
}

_BODY = b"Request body too large for this server.\n"


class PatchTargetMissing(RuntimeError):
    """A library no longer has what a patch here relies on: the server must not start."""


def _has(cls: type, name: str) -> bool:
    if hasattr(cls, name):
        return True
    for base in cls.__mro__:
        try:
            source = inspect.getsource(base)
            if f"self.{name} =" in source or f'"{name}"' in source:
                return True
        except (OSError, TypeError):  # no source (a C type, ``object``)
            continue
    return False


def missing_targets() -> list[str]:
    """What :data:`RELIED_ON` names that the installed libraries lack, each with its
    library and version (empty when all is there; a library not installed is skipped)."""
    missing = []
    for library, targets in RELIED_ON.items():
        try:
            version = importlib.metadata.version(library)
        except importlib.metadata.PackageNotFoundError:
            continue
        for module_name, class_name, names in targets:
            where = f"{library} {version}: {module_name}.{class_name}"
            try:
                cls = getattr(importlib.import_module(module_name), class_name)
            except (ImportError, AttributeError):
                missing.append(f"{where} (not found)")
                continue
            missing.extend(f"{where}.{name}" for name in names if not _has(cls, name))
    return missing


def install(*, max_request_bytes: int) -> None:
    """Check every target, then patch daphne (the channel layer uses its mixin itself)."""
    missing = missing_targets()
    if missing:
        raise PatchTargetMissing(
            "openprogram_site/daphne_patches.py relies on what these libraries no longer "
            "have; re-verify it against them: " + "; ".join(missing)
        )
    oversize_frames_answered()
    oversize_bodies_refused(max_request_bytes)


# --- oversize WebSocket frames -------------------------------------------------------------


def _answer_then_close(self: Any, msg_size: int, max_msg_size: int, reason: str) -> None:
    if self.state == self.STATE_OPEN and not self.failedByMe:
        frame = too_large_frame(size=msg_size, limit=max_msg_size)
        self.sendMessage(json.dumps(frame).encode(), isBinary=False)
    # A close handshake rather than autobahn's default abort of the TCP connection.
    self.failByDrop = False
    self._fail_connection(CLOSE_TOO_LARGE, "frame too large")


def oversize_frames_answered() -> None:
    """Make daphne answer frames over its size limit (idempotent; no-op without daphne)."""
    try:
        from daphne.ws_protocol import WebSocketProtocol
    except ImportError:  # served by another ASGI server: its own limits apply
        return
    WebSocketProtocol._max_message_size_exceeded = _answer_then_close


# --- oversize HTTP bodies ------------------------------------------------------------------


class _Discard:
    """Stands in for the body file of a refused request: bytes still in flight go nowhere."""

    closed = False

    def write(self, data: bytes) -> None:
        pass

    def seek(self, *args: Any) -> int:
        return 0

    def read(self, *args: Any) -> bytes:
        return b""

    def close(self) -> None:
        self.closed = True


def _refuse(request: Any) -> None:
    request._body_refused = True
    request.content = _Discard()
    transport = request.channel.transport if request.channel is not None else None
    if transport is None:
        return
    transport.write(
        b"HTTP/1.1 413 Payload Too Large\r\n"
        b"Content-Type: text/plain; charset=utf-8\r\n"
        b"Content-Length: " + str(len(_BODY)).encode() + b"\r\n"
        b"Connection: close\r\n\r\n" + _BODY
    )
    transport.loseConnection()


def oversize_bodies_refused(limit: int) -> None:
    """Refuse request bodies over ``limit`` bytes in every daphne request from now on."""
    try:
        from daphne.http_protocol import WebRequest
    except ImportError:  # served by another ASGI server: its own limits apply
        return
    if getattr(WebRequest, "_body_limit", None) is not None:
        WebRequest._body_limit = limit
        return
    got_length = WebRequest.gotLength
    content_chunk = WebRequest.handleContentChunk
    process = WebRequest.process

    def gotLength(self: Any, length: int | None) -> None:
        self._body_bytes = 0
        if length is not None and length > WebRequest._body_limit:
            _refuse(self)
            return
        got_length(self, length)

    def handleContentChunk(self: Any, data: bytes) -> None:
        if getattr(self, "_body_refused", False):
            return
        self._body_bytes = getattr(self, "_body_bytes", 0) + len(data)
        if self._body_bytes > WebRequest._body_limit:
            self.content.close()  # the spooled part is dropped with its file
            _refuse(self)
            return
        content_chunk(self, data)

    def guarded_process(self: Any) -> None:
        if getattr(self, "_body_refused", False):
            return  # answered already; the application never sees it
        process(self)

    WebRequest._body_limit = limit
    WebRequest.gotLength = gotLength
    WebRequest.handleContentChunk = handleContentChunk
    WebRequest.process = guarded_process


# --- relayed text frames written at once ---------------------------------------------------


def _text_frame(payload: bytes) -> bytes:
    """One unfragmented, unmasked text frame (RFC 6455 5.2), as a server sends it."""
    size = len(payload)
    if size < 126:
        return bytes((0x81, size)) + payload
    if size < 65536:
        return b"\x81\x7e" + size.to_bytes(2, "big") + payload
    return b"\x81\x7f" + size.to_bytes(8, "big") + payload


class DirectTextFrames:
    """Text frames for one daphne WebSocket connection (the module docstring says why)."""

    __slots__ = ("_connections", "_protocol")

    def __init__(self, connections: dict[Any, dict[str, Any]], protocol: Any) -> None:
        self._connections = connections
        self._protocol = protocol

    @classmethod
    def of(cls, send: Any) -> DirectTextFrames | None:
        """The writer behind ``send`` if it is daphne's plain-TCP WebSocket send, else None."""
        try:
            from daphne.server import Server
            from daphne.ws_protocol import WebSocketProtocol
            from twisted.internet.tcp import Server as TCPServer
        except ImportError:  # served by another ASGI server
            return None
        if not isinstance(send, functools.partial) or len(send.args) != 1 or send.keywords:
            return None
        if getattr(send.func, "__func__", None) is not Server.handle_reply:
            return None
        protocol = send.args[0]
        # Exactly Twisted's TCP connection: TLS and other transports keep daphne's path.
        if not isinstance(protocol, WebSocketProtocol):
            return None
        if type(getattr(protocol, "transport", None)) is not TCPServer:
            return None
        return cls(send.func.__self__.connections, protocol)

    def write_text(self, text: str) -> bool:
        """Write ``text`` as one text frame; False when daphne's send must do it instead."""
        protocol = self._protocol
        if (
            not text  # daphne sends nothing for an empty text: its path decides
            or protocol.state != protocol.STATE_OPEN
            or protocol.send_queue
            or protocol.logFrames
            or protocol.logOctets
            or protocol._perMessageCompress is not None
        ):
            return False
        connection = self._connections.get(protocol)
        if connection is None or connection.get("disconnected"):
            return True  # daphne drops a send to a gone connection without a word: so do we
        payload = text.encode()
        if (0 < protocol.maxMessagePayloadSize < len(payload)) or (
            0 < protocol.autoFragmentSize < len(payload)
        ):
            return False  # daphne's path raises autobahn's error or fragments, as ever
        frame = _text_frame(payload)
        transport = protocol.transport
        if (
            transport.connected
            and not transport.disconnecting
            and not transport._tempDataLen
            and len(transport.dataBuffer) == transport.offset
        ):
            # Nothing of this connection waits in Twisted: send now. What a partial send
            # leaves, or all of it after an error, goes to Twisted's buffer, which writes
            # it on or reports the lost connection.
            sent = transport.writeSomeData(frame)
            if isinstance(sent, int) and sent > 0:
                if sent == len(frame):
                    return True
                frame = frame[sent:]
        transport.write(frame)
        return True


class FrameWriterInScope:
    """ASGI middleware: a WebSocket served by daphne gets its :class:`DirectTextFrames`
    in its scope (``core.socket_frames.FRAME_WRITER``); anything else passes unchanged."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        writer = DirectTextFrames.of(send) if scope.get("type") == "websocket" else None
        if writer is not None:
            scope = {**scope, FRAME_WRITER: writer}
        await self.inner(scope, receive, send)
