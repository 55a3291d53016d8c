"""Writing a relayed text frame to a daphne WebSocket in one call, not seven layers.

A streaming turn writes one frame per open tab every ~20 ms, and under daphne each went
through the ASGI send coroutine (``Server.handle_reply``), daphne's protocol
(``handle_reply`` → ``serverSend``), autobahn's ``sendMessage`` → ``sendFrame`` →
``sendData`` (argument checks, traffic counters, and arguments of a debug log line
formatted on every frame whether or not debug logging is on: no setting skips them) and
Twisted's ``transport.write``. Twisted never writes at once: it buffers the bytes,
registers the socket with the reactor (an ``epoll_ctl``), writes on the loop's next turn
through its logging context, then unregisters it (another ``epoll_ctl``). For a lone frame
that is most of what sending it costs.

:class:`DirectFrames` does the same write in one step: the frame's bytes made by autobahn's
public broadcast helper (:class:`~autobahn.websocket.protocol.PreparedMessage`, uncompressed,
as daphne never negotiates compression), sent on the socket at once when Twisted has
nothing of this connection's waiting, and otherwise handed to ``transport.write`` behind
what waits, so the order on the wire is the order of the calls. It only reads library
state (no library code is replaced); it declines (``write_text`` returns False, and the
caller uses the ASGI send) whenever the connection is not a plain open one: another ASGI
server, TLS, a socket not yet accepted or already closing, autobahn's chopped-write queue
in use, frame logging on, a frame over daphne's size limit. Pinned to the Twisted,
autobahn and daphne versions it reads (``pyproject.toml``); ``tests/integration/site/
test_ws_frames.py`` checks it against a real daphne.
"""

from __future__ import annotations

import functools
from typing import Any

try:
    from autobahn.websocket.protocol import PreparedMessage
    from daphne.server import Server
    from daphne.ws_protocol import WebSocketProtocol
    from twisted.internet.tcp import Server as TCPServer
except ImportError:  # served by another ASGI server: DirectFrames.of declines
    Server = None

__all__ = ["DirectFrames"]


class DirectFrames:
    """Text frames for one daphne WebSocket connection; see the module docstring."""

    __slots__ = ("_connections", "_protocol", "_transport")

    def __init__(self, connections: dict[Any, dict[str, Any]], protocol: Any) -> None:
        self._connections = connections
        self._protocol = protocol
        self._transport = protocol.transport

    @classmethod
    def of(cls, send: Any) -> DirectFrames | None:
        """The writer behind ``send`` if it is daphne's plain-TCP WebSocket send, else None."""
        if (
            Server is None
            or not isinstance(send, functools.partial)
            or len(send.args) != 1
            or send.keywords
        ):
            return None
        server, protocol = getattr(send.func, "__self__", None), send.args[0]
        if getattr(send.func, "__func__", None) is not Server.handle_reply:
            return None
        if not isinstance(protocol, WebSocketProtocol):
            return None
        # Exactly Twisted's TCP connection: TLS and other transports keep daphne's path.
        if type(getattr(protocol, "transport", None)) is not TCPServer:
            return None
        return cls(server.connections, protocol)

    def write_text(self, text: str) -> bool:
        """Write ``text`` as one text frame; False if the caller must use daphne's send."""
        protocol = self._protocol
        if (
            protocol.state != protocol.STATE_OPEN
            or protocol.send_queue
            or protocol.logFrames
            or protocol.logOctets
        ):
            return False  # daphne's path: it accepts, raises on closed, queues, logs
        connection = self._connections.get(protocol)
        if connection is None or connection.get("disconnected"):
            return True  # daphne drops a send to a gone connection without a word: so do we
        payload = text.encode()
        if 0 < protocol.maxMessagePayloadSize < len(payload):
            return False  # daphne's path raises autobahn's error, as before
        frame = PreparedMessage(payload, False, False, True).payloadHybi
        transport = self._transport
        if (
            transport.connected
            and not transport.disconnecting
            and not transport._tempDataLen
            and len(transport.dataBuffer) == transport.offset
        ):
            # Nothing of this connection waits in Twisted: send now. A partial send or an
            # error leaves the rest to Twisted's buffer, which reports a lost connection.
            sent = transport.writeSomeData(frame)
            if isinstance(sent, int) and sent > 0:
                if sent == len(frame):
                    return True
                frame = frame[sent:]
        transport.write(frame)
        return True
