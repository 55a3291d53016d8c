"""One MCP server's connection, supervised: connect, list tools, follow changes, retry.

A :class:`ServerConnection` lives entirely on the manager's event loop. Its
supervisor task owns the SDK client (the SDK's task groups must be entered and
left by the same task), reconnects with capped exponential backoff after a
failed start, a crash or a timeout, and reports every state change and tool
listing to the manager through two callbacks. Calls come in from other tasks
on the same loop and share the session. How it reaches the server (a stdio
child or streamable HTTP, each watched for its end) is
:mod:`openprogram.mcp.transports`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AsyncExitStack
from typing import Any, TypeVar

import httpx2
import mcp_types
from mcp import Client
from mcp.shared.exceptions import MCPError

from openprogram.mcp.calls import CallsInFlight
from openprogram.mcp.catalog import MCPPrompt, MCPResource
from openprogram.mcp.catalog_listing import (
    list_prompts,
    list_resources,
    prompt_text,
    resource_text,
)
from openprogram.mcp.changes import follow_list_changes_for_session
from openprogram.mcp.config import MCPServerConfig
from openprogram.mcp.elicitation import CallElicitor
from openprogram.mcp.errors import (
    MCPCallTimeoutError,
    MCPProtocolError,
    MCPServerUnavailableError,
)
from openprogram.mcp.oauth import connect_deadline
from openprogram.mcp.supervision import Backoff, ServerState
from openprogram.mcp.tool import ProgressFn
from openprogram.mcp.transports import StderrTail, open_transport

__all__ = ["ServerConnection"]

logger = logging.getLogger(__name__)

T = TypeVar("T")
CatalogListener = Callable[["ServerConnection", list[MCPPrompt], list[MCPResource]], None]

_CONNECTION_CLOSED = -32000  # JSON-RPC code the SDK uses for a dead transport
_MAX_TOOL_PAGES = 100  # a server whose cursor never ends must not hang the listing


class _ConnectionLost(Exception):
    """The transport ended while the session was in use."""


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
        auth: httpx2.Auth | None = None,
        on_catalog: CatalogListener | None = None,
    ) -> None:
        """``auth``: sign HTTP requests (an OAuth provider from :mod:`openprogram.mcp.oauth`).

        ``on_catalog`` gets the server's prompts and resources after connecting and
        whenever the server says either list changed.
        """
        self.config = config
        self._auth = auth
        self._health_interval = health_interval
        self.state: ServerState = "stopped"
        self.error: str | None = None
        self.retries = 0
        self.protocol_version: str | None = None
        """The revision the live session negotiated (None while not connected)."""
        self.last_change = time.time()
        self._backoff = backoff
        self._on_state = on_state
        self._on_tools = on_tools
        self._client: Client | None = None
        self._stop = asyncio.Event()
        self._lost = asyncio.Event()
        self._tools_changed = asyncio.Event()
        self._catalog_changed = asyncio.Event()
        self._on_catalog = on_catalog
        self._task: asyncio.Task[None] | None = None
        self._calls = CallsInFlight()

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
            stderr = StderrTail(self.name)
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
                self.protocol_version = None
                stderr.close_writer()
            if self._stop.is_set():
                break
            if failures:
                self.retries += 1
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), self._backoff.delay(failures))
            # failures == 0 here means a clean end without a stop request: reconnect at once.
        self._set_state("stopped", self.error)

    async def _run_session(self, stderr: StderrTail) -> None:
        self._lost.clear()
        self._tools_changed.clear()
        async with AsyncExitStack() as stack:
            # The OAuth flow (if any) runs inside this and stops the clock while the user
            # is at the provider's consent page (openprogram.mcp.oauth.connect_deadline).
            async with asyncio.timeout(self.config.timeout) as deadline:
                with connect_deadline(deadline):
                    client = await stack.enter_async_context(
                        Client(
                            open_transport(
                                self.config, auth=self._auth, stderr=stderr, lost=self._lost
                            ),
                            # 2026-07-28 where the server speaks it (server/discover), else the
                            # initialize handshake of older servers.
                            mode="auto",
                            cache=None,
                            message_handler=self._on_message,
                            elicitation_callback=self._on_elicitation,
                        )
                    )
                    await self._list_tools(client)
                    await self._list_catalog(client)
            self._client = client
            self.protocol_version = client.protocol_version
            follow_list_changes_for_session(
                stack,
                client,
                server=self.name,
                tools_changed=self._tools_changed.set,
                catalog_changed=self._catalog_changed.set,
                pause=self._health_interval,
            )
            self._set_state("ready", None)
            while True:
                # Re-listing on a quiet interval doubles as a health check: an HTTP
                # server that went away (no stream ends) or a hung one is noticed.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self._health_interval):
                        await _first_set(
                            self._stop, self._lost, self._tools_changed, self._catalog_changed
                        )
                if self._stop.is_set():
                    return
                if self._lost.is_set():
                    raise _ConnectionLost("the server closed the connection")
                catalog_changed = self._catalog_changed.is_set()
                self._tools_changed.clear()
                self._catalog_changed.clear()
                async with asyncio.timeout(self.config.timeout):
                    await self._list_tools(client)
                    if catalog_changed:
                        await self._list_catalog(client)

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, mcp_types.ToolListChangedNotification):
            self._tools_changed.set()
        elif isinstance(
            message,
            mcp_types.PromptListChangedNotification | mcp_types.ResourceListChangedNotification,
        ):
            self._catalog_changed.set()
        elif isinstance(message, Exception):
            logger.debug("MCP server %r transport reported %r", self.name, message)

    async def _on_elicitation(self, context: Any, params: Any) -> Any:
        return await self._calls.elicit(params, server=self.name)

    async def _list_catalog(self, client: Client) -> None:
        if self._on_catalog is not None:
            prompts = await list_prompts(client, self.name)
            resources = await list_resources(client, self.name)
            self._on_catalog(self, prompts, resources)

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

    def _live_client(self) -> Client:
        client = self._client
        if self.state != "ready" or client is None:
            reason = f": {self.error}" if self.error else f" (it is {self.state})"
            raise MCPServerUnavailableError(f"MCP server {self.name!r} is not connected{reason}")
        return client

    async def call(
        self,
        tool: str,
        args: dict[str, Any],
        *,
        timeout: float | None,
        on_progress: ProgressFn | None,
        elicitor: CallElicitor | None = None,
    ) -> mcp_types.CallToolResult:
        client = self._live_client()
        budget = timeout if timeout is not None else self.config.timeout
        with (
            self._calls.track(elicitor) as in_flight,
            self._mapped_errors(f"MCP tool {tool!r}", tool, budget),
        ):
            async with asyncio.timeout(budget) as deadline:
                in_flight.deadline = deadline
                return await client.call_tool(tool, args, progress_callback=on_progress)

    async def request(self, what: str, send: Callable[[Client], Awaitable[T]]) -> T:
        """One other request on the live session (a prompt, a resource), errors mapped."""
        client = self._live_client()
        with self._mapped_errors(what, what, self.config.timeout):
            async with asyncio.timeout(self.config.timeout):
                return await send(client)

    async def get_prompt_text(self, name: str, arguments: dict[str, str]) -> str:
        """The prompt ``name`` filled in with ``arguments``, as the text a person would send."""
        result = await self.request(f"prompt {name!r}", lambda c: c.get_prompt(name, arguments))
        return prompt_text(result)

    async def read_resource_text(self, uri: str) -> str:
        """The resource's text; raises MCPResourceError when it cannot be attached."""
        result = await self.request(f"resource {uri!r}", lambda c: c.read_resource(uri))
        return resource_text(result, uri)

    @contextlib.contextmanager
    def _mapped_errors(self, what: str, target: str, budget: float) -> Iterator[None]:
        """Turn the SDK's failures into :mod:`openprogram.mcp.errors` with the server's name."""
        try:
            yield
        except TimeoutError as exc:
            raise MCPCallTimeoutError(
                f"{what} on server {self.name!r} timed out after {budget:g}s"
            ) from exc
        except MCPError as exc:
            if exc.code == _CONNECTION_CLOSED:
                self._lost.set()
                raise MCPServerUnavailableError(
                    f"MCP server {self.name!r} is not connected: the connection closed during "
                    f"the call to {target!r}"
                ) from exc
            raise MCPProtocolError(
                f"MCP server {self.name!r} returned an error for {target!r}: {exc}"
            ) from exc
        except RuntimeError as exc:
            # The SDK's own checks of the answer: structured content that breaks the
            # tool's output schema, or a result shape this client did not ask for.
            first_line = str(exc).strip().splitlines()[0][:500] if str(exc).strip() else ""
            raise MCPProtocolError(
                f"MCP server {self.name!r} returned an invalid result for {target!r}: "
                f"{first_line or type(exc).__name__}"
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
