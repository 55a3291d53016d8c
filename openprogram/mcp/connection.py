"""One MCP server's connection, supervised: connect, list tools, follow changes, retry.

A :class:`ServerConnection` lives entirely on the manager's event loop. Its
supervisor task owns the SDK client (the SDK's task groups must be entered and
left by the same task), reconnects with capped exponential backoff after a
failed start, a crash or a timeout, and reports every state change and tool
listing to the manager through two callbacks. Calls come in from other tasks
on the same loop and share the session.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from types import TracebackType
from typing import IO, Any, Literal

import anyio
import mcp_types
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from openprogram.mcp.config import MCPServerConfig
from openprogram.mcp.errors import (
    MCPCallTimeoutError,
    MCPProtocolError,
    MCPServerUnavailableError,
)
from openprogram.mcp.tool import ProgressFn

__all__ = ["Backoff", "ServerConnection", "ServerState"]

logger = logging.getLogger(__name__)

ServerState = Literal["connecting", "ready", "failed", "stopped"]

_CONNECTION_CLOSED = -32000  # JSON-RPC code the SDK uses for a dead transport
_STDERR_TAIL_CHARS = 400
_STDERR_DRAIN_SECONDS = 1.0
_MAX_TOOL_PAGES = 100  # a server whose cursor never ends must not hang the listing


class Backoff:
    """Exponential retry delays: ``initial``, doubled per consecutive failure, capped."""

    def __init__(self, initial: float = 1.0, maximum: float = 60.0) -> None:
        if initial <= 0 or maximum < initial:
            raise ValueError(f"need 0 < initial <= maximum, got {initial!r}, {maximum!r}")
        self.initial = initial
        self.maximum = maximum

    def delay(self, failures: int) -> float:
        return min(self.maximum, self.initial * 2 ** max(0, failures - 1))


class _ConnectionLost(Exception):
    """The transport ended while the session was in use."""


class _EndWatchingStream:
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

    def __aiter__(self) -> _EndWatchingStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream as exc:
            raise StopAsyncIteration from exc

    async def __aenter__(self) -> _EndWatchingStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def _leaf_exception(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _describe(exc: BaseException) -> str:
    leaf = _leaf_exception(exc)
    if isinstance(leaf, TimeoutError | asyncio.TimeoutError):
        return "timed out"
    text = str(leaf).strip()
    return f"{type(leaf).__name__}: {text}" if text else type(leaf).__name__


class ServerConnection:
    """Keeps one configured server connected and reports what it has."""

    def __init__(
        self,
        config: MCPServerConfig,
        *,
        backoff: Backoff,
        health_interval: float,
        on_state: Callable[[ServerConnection], None],
        on_tools: Callable[[ServerConnection, list[mcp_types.Tool]], None],
    ) -> None:
        self.config = config
        self._health_interval = health_interval
        self.state: ServerState = "stopped"
        self.error: str | None = None
        self.retries = 0
        self.last_change = time.time()
        self._backoff = backoff
        self._on_state = on_state
        self._on_tools = on_tools
        self._client: Client | None = None
        self._stop = asyncio.Event()
        self._lost = asyncio.Event()
        self._tools_changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        return self.config.name

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(
            self._supervise(), name=f"mcp-server-{self.name}"
        )

    async def stop(self) -> None:
        """Close the session and its child process; returns when they are gone."""
        self._stop.set()
        if self._task is not None:
            if self.state == "connecting":
                # A hung start would otherwise hold shutdown for the whole timeout;
                # cancelling still runs the SDK's shielded process teardown.
                self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._set_state("stopped", self.error)

    def _set_state(self, state: ServerState, error: str | None = None) -> None:
        if state == self.state and error == self.error:
            return
        self.state = state
        self.error = error
        self.last_change = time.time()
        self._on_state(self)

    async def _supervise(self) -> None:
        failures = 0
        while not self._stop.is_set():
            self._set_state("connecting", self.error)
            stderr = _StderrTail(self.name)
            try:
                await self._run_session(stderr)
                failures = 0
            except Exception as exc:
                failures += 1
                message = _describe(exc)
                tail = await stderr.text_after_exit()
                if tail:
                    message = f"{message}; stderr: {tail}"
                logger.warning("MCP server %r failed: %s", self.name, message)
                self._set_state("failed", message)
            finally:
                self._client = None
                stderr.close_writer()
            if self._stop.is_set():
                break
            if failures:
                self.retries += 1
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), self._backoff.delay(failures))
            # failures == 0 here means a clean end without a stop request: reconnect at once.
        self._set_state("stopped", self.error)

    async def _run_session(self, stderr: _StderrTail) -> None:
        self._lost.clear()
        self._tools_changed.clear()
        async with AsyncExitStack() as stack:
            async with asyncio.timeout(self.config.timeout):
                client = await stack.enter_async_context(
                    Client(
                        self._transport(stderr),
                        mode="legacy",
                        cache=None,
                        message_handler=self._on_message,
                    )
                )
                await self._list_tools(client)
            self._client = client
            self._set_state("ready", None)
            while True:
                # Re-listing on a quiet interval doubles as a health check: an HTTP
                # server that went away (no stream ends) or a hung one is noticed.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self._health_interval):
                        await _first_set(self._stop, self._lost, self._tools_changed)
                if self._stop.is_set():
                    return
                if self._lost.is_set():
                    raise _ConnectionLost("the server closed the connection")
                self._tools_changed.clear()
                async with asyncio.timeout(self.config.timeout):
                    await self._list_tools(client)

    @asynccontextmanager
    async def _transport(self, stderr: _StderrTail) -> AsyncIterator[tuple[Any, Any]]:
        if self.config.transport == "stdio":
            from mcp.client.stdio import stdio_client

            params = StdioServerParameters(
                command=self.config.command, args=list(self.config.args), env=self.config.env
            )
            try:
                async with stdio_client(params, errlog=stderr.writer) as (read, write):
                    # The child holds its own copy now; ours would keep the pipe open forever.
                    stderr.close_writer()
                    yield _EndWatchingStream(read, self._lost), write
            finally:
                stderr.close_writer()
        else:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            http = httpx2.AsyncClient(
                headers=self.config.headers,
                timeout=httpx2.Timeout(self.config.timeout, read=max(300.0, self.config.timeout)),
            )
            async with http, streamable_http_client(self.config.url, http_client=http) as streams:
                read, write = streams
                yield _EndWatchingStream(read, self._lost), write

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, mcp_types.ToolListChangedNotification):
            self._tools_changed.set()
        elif isinstance(message, Exception):
            logger.debug("MCP server %r transport reported %r", self.name, message)

    async def _list_tools(self, client: Client) -> None:
        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        for _ in range(_MAX_TOOL_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        self._on_tools(self, tools)

    async def call(
        self,
        tool: str,
        args: dict[str, Any],
        *,
        timeout: float | None,
        on_progress: ProgressFn | None,
    ) -> mcp_types.CallToolResult:
        client = self._client
        if self.state != "ready" or client is None:
            reason = f": {self.error}" if self.error else f" (it is {self.state})"
            raise MCPServerUnavailableError(f"MCP server {self.name!r} is not connected{reason}")
        budget = timeout if timeout is not None else self.config.timeout
        try:
            async with asyncio.timeout(budget):
                return await client.call_tool(tool, args, progress_callback=on_progress)
        except TimeoutError as exc:
            raise MCPCallTimeoutError(
                f"MCP tool {tool!r} on server {self.name!r} timed out after {budget:g}s"
            ) from exc
        except MCPError as exc:
            if exc.code == _CONNECTION_CLOSED:
                self._lost.set()
                raise MCPServerUnavailableError(
                    f"MCP server {self.name!r} is not connected: the connection closed during "
                    f"the call to {tool!r}"
                ) from exc
            raise MCPProtocolError(
                f"MCP server {self.name!r} returned an error for {tool!r}: {exc}"
            ) from exc
        except OSError as exc:
            self._lost.set()
            raise MCPServerUnavailableError(
                f"MCP server {self.name!r} is not connected: {_describe(exc)}"
            ) from exc


async def _first_set(*events: asyncio.Event) -> None:
    waiters = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()


class _StderrTail:
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
