"""How a connection reaches its server, and how it notices that the server is gone.

- **stdio**: the server runs as a child process (the SDK's ``stdio_client``),
  confined unless its config opts out (:mod:`openprogram.mcp.stdio_confinement`),
  whose stderr goes to a :class:`StderrTail`, so a failed start can say why
  ("ModuleNotFoundError: ...") without a chatty server growing memory;
- **streamable HTTP**: an ``httpx2`` client with the configured headers and,
  for OAuth servers, the request signer.

Either way the read stream is wrapped in an :class:`EndWatchingStream`: the SDK
gives no public signal when a server dies, and its read stream ending is that
signal, so the connection's supervisor reconnects instead of waiting for the
next call to fail.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import TracebackType
from typing import IO, Any

import anyio
import httpx2
from mcp import StdioServerParameters

from openprogram.mcp.config import MCPServerConfig
from openprogram.mcp.stdio_confinement import confined_server

__all__ = ["EndWatchingStream", "StderrTail", "open_transport"]

_STDERR_TAIL_CHARS = 400
_STDERR_DRAIN_SECONDS = 1.0


@asynccontextmanager
async def open_transport(
    config: MCPServerConfig,
    *,
    auth: httpx2.Auth | None,
    stderr: StderrTail,
    lost: asyncio.Event,
) -> AsyncIterator[tuple[Any, Any]]:
    """The ``(read, write)`` streams to ``config``'s server; ``lost`` is set when reading ends."""
    if config.transport == "stdio":
        from mcp.client.stdio import stdio_client

        confined = await asyncio.to_thread(confined_server, config) if config.confined else None
        argv = confined.argv if confined is not None else [config.command, *config.args]
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=config.env)
        try:
            async with stdio_client(params, errlog=stderr.writer) as (read, write):
                # The child holds its own copy now; ours would keep the pipe open forever.
                stderr.close_writer()
                yield EndWatchingStream(read, lost), write
        finally:
            stderr.close_writer()
            if confined is not None:
                await asyncio.to_thread(confined.close)
    else:
        from mcp.client.streamable_http import streamable_http_client

        http = httpx2.AsyncClient(
            headers=config.headers,
            auth=auth,
            timeout=httpx2.Timeout(config.timeout, read=max(300.0, config.timeout)),
        )
        async with http, streamable_http_client(config.url, http_client=http) as streams:
            read, write = streams
            yield EndWatchingStream(read, lost), write


class EndWatchingStream:
    """Wraps the transport's read stream and sets ``ended`` when it closes.

    The SDK gives no public signal when a stdio server dies; its read stream
    ending is that signal, so the supervisor can reconnect instead of waiting
    for the next call to fail.
    """

    def __init__(self, inner: Any, ended: asyncio.Event) -> None:
        self._inner = inner
        self._ended = ended

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except BaseException:
            self._ended.set()
            raise

    async def aclose(self) -> None:
        self._ended.set()
        await self._inner.aclose()

    def __aiter__(self) -> EndWatchingStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream as exc:
            raise StopAsyncIteration from exc

    async def __aenter__(self) -> EndWatchingStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class StderrTail:
    """A pipe for a stdio server's stderr that keeps only its last characters.

    The tail explains a failed start ("ModuleNotFoundError: ...") in the
    server's status; keeping only a tail means a chatty long-lived server never
    grows memory or disk. A daemon thread drains the pipe until the child exits.
    """

    def __init__(self, server: str) -> None:
        read_fd, write_fd = os.pipe()
        self.writer: IO[str] = os.fdopen(write_fd, "w")
        self._tail = ""
        self._lock = threading.Lock()
        self._thread = threading.Thread(
            target=self._drain, args=(read_fd,), name=f"mcp-stderr-{server}", daemon=True
        )
        self._thread.start()

    def _drain(self, read_fd: int) -> None:
        with os.fdopen(read_fd, "rb") as pipe:
            while chunk := pipe.read1(4096):
                text = chunk.decode("utf-8", errors="replace")
                with self._lock:
                    self._tail = (self._tail + text)[-_STDERR_TAIL_CHARS * 4 :]

    def close_writer(self) -> None:
        if not self.writer.closed:
            self.writer.close()

    async def text_after_exit(self) -> str:
        """The tail, once the child's last words are read (bounded wait)."""
        self.close_writer()
        await asyncio.to_thread(self._thread.join, _STDERR_DRAIN_SECONDS)
        with self._lock:
            text = " ".join(self._tail.split())
        return text[-_STDERR_TAIL_CHARS:]
