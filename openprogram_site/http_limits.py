"""Oversize HTTP request bodies are refused while they arrive, before anything is stored.

daphne (through twisted.web) receives a request's whole body — spooled to a temporary
file past 100 KB — before the application sees a byte, and it has no size limit of its
own. Login, CSRF and every view-level limit therefore act only after the body is on
disk: anyone, signed in or not, could fill the server's disk with one slow request.
:func:`oversize_bodies_refused` hooks daphne's request class so a body whose declared
``Content-Length`` exceeds the limit is answered ``413`` as soon as its headers arrive,
and a chunked body is cut off (``413``, connection closed) the moment it passes the
limit; nothing of it is kept. Like ``ws_limits``, it runs when ``openprogram_site.asgi``
is imported, in the daphne process before it listens.
"""

from __future__ import annotations

from typing import Any

__all__ = ["oversize_bodies_refused"]

_BODY = b"Request body too large for this server.\n"


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
    from daphne.http_protocol import WebRequest

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
