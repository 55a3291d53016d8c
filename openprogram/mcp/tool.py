"""The AgentTool an MCP server's tool becomes in the registry.

A call prepares its arguments with the rules every kind of tool shares
(``openprogram.programs.arguments``: a null for an optional parameter whose
schema does not allow null is left out, then the server's JSON Schema is
checked in the dialect it names) before anything is sent, goes through the
manager (which owns the connection and enforces the per-server timeout),
streams progress notifications to ``on_update`` and turns the server's content
blocks into the same capped, persisted text built-in tools produce, with images
as attachments.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

import mcp_types

from openprogram.agent.context import get_turn
from openprogram.agent.types import AgentTool, AgentToolResult, OnUpdate
from openprogram.mcp.config import MCPServerConfig
from openprogram.mcp.elicitation import CallElicitor
from openprogram.mcp.errors import MCPCallError
from openprogram.programs.arguments import InvalidArguments, prepare_arguments
from openprogram.programs.results import TailAccumulator

__all__ = ["MAX_DESCRIPTION_CHARS", "MCPTool", "ProgressFn", "ToolCaller", "mcp_tool_name"]

logger = logging.getLogger(__name__)

MAX_DESCRIPTION_CHARS = 2_000
"""Descriptions are untrusted server data; a huge one must not flood a prompt."""

_WIRE_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_MAX_WIRE_NAME = 64  # the OpenAI tools API limit; other providers accept at least this

ProgressFn = Callable[[float, float | None, str | None], Awaitable[None]]


class ToolCaller(Protocol):
    """What an :class:`MCPTool` sends its calls through (the manager, or the accounts)."""

    async def call(
        self,
        server: str,
        tool: str,
        args: dict[str, Any],
        *,
        timeout: float | None = None,
        on_progress: ProgressFn | None = None,
        elicitor: CallElicitor | None = None,
    ) -> mcp_types.CallToolResult: ...


def mcp_tool_name(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>``, with characters providers reject replaced by ``_``."""
    return _WIRE_NAME_UNSAFE.sub("_", f"mcp__{server}__{tool}")[:_MAX_WIRE_NAME]


def _clean_description(description: str | None) -> str:
    text = _CONTROL_CHARS.sub("", description or "").strip()
    if len(text) > MAX_DESCRIPTION_CHARS:
        text = text[: MAX_DESCRIPTION_CHARS - 1] + "…"
    return text


def _object_schema(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """Providers insist on an object schema at the root; MCP promises one but check."""
    result = dict(schema or {})
    if result.get("type") != "object":
        result = {"type": "object", "properties": {}}
    result.setdefault("properties", {})
    return result


def _progress_text(progress: float, total: float | None, message: str | None) -> str:
    if message:
        return message
    if total:
        return f"progress {progress:g}/{total:g}"
    return f"progress {progress:g}"


def _resource_label(uri: str, mime_type: str | None, name: str | None = None) -> str:
    label = f"{_clean_description(name)} <{uri}>" if name else f"<{uri}>"
    return f"{label} ({mime_type})" if mime_type else label


def _result_parts(
    result: mcp_types.CallToolResult, *, structured_as_json: bool = False
) -> tuple[str, list[dict[str, Any]]]:
    """The text the model reads and the non-text attachments of one tool result.

    ``structured_as_json``: the tool declared an output schema, so its (checked)
    structured content is what the model reads, as JSON, instead of the text
    blocks that merely repeat it. The exception is the SDKs' wrapper of a plain
    return value, ``{"result": value}`` next to a text block holding just that
    value: the model reads the value, as it would from a tool without a schema.
    """
    texts: list[str] = []
    attachments: list[dict[str, Any]] = []
    if structured_as_json and _wraps_text(result):
        structured_as_json = False
    if structured_as_json:
        texts.append(json.dumps(result.structured_content, ensure_ascii=False))
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            if not structured_as_json:
                texts.append(block.text)
        elif isinstance(block, mcp_types.ImageContent):
            attachments.append({"type": "image", "mime_type": block.mime_type, "data": block.data})
            texts.append(f"[image {len(attachments)}: {block.mime_type}]")
        elif isinstance(block, mcp_types.AudioContent):
            texts.append(f"[audio omitted: {block.mime_type}]")
        elif isinstance(block, mcp_types.EmbeddedResource):
            resource = block.resource
            label = _resource_label(str(resource.uri), resource.mime_type)
            if isinstance(resource, mcp_types.TextResourceContents):
                texts.append(f"[resource {label}]\n{resource.text}")
            elif (resource.mime_type or "").startswith("image/"):
                attachments.append(
                    {"type": "image", "mime_type": resource.mime_type, "data": resource.blob}
                )
                texts.append(f"[image {len(attachments)}: resource {label}]")
            else:
                texts.append(
                    f"[binary resource {label} omitted, {len(resource.blob)} base64 chars]"
                )
        elif isinstance(block, mcp_types.ResourceLink):
            label = _resource_label(str(block.uri), block.mime_type, block.name)
            about = f": {_clean_description(block.description)}" if block.description else ""
            texts.append(f"[resource link {label}{about}]")
    if not texts and result.structured_content is not None:
        texts.append(json.dumps(result.structured_content, ensure_ascii=False, indent=2))
    return "\n".join(texts), attachments


def _wraps_text(result: mcp_types.CallToolResult) -> bool:
    structured = result.structured_content
    if not isinstance(structured, dict) or set(structured) != {"result"}:
        return False
    value = structured["result"]
    shown = "".join(b.text for b in result.content if isinstance(b, mcp_types.TextContent))
    return shown == (value if isinstance(value, str) else json.dumps(value))


def _hints(annotations: Any) -> dict[str, bool]:
    """The server's tool annotations, read so that a lie can only make the tool stricter.

    Missing hints take the spec's defaults (``readOnlyHint: false``,
    ``destructiveHint: true``): a tool that says nothing is treated as destructive. Only
    an explicit ``destructiveHint: false`` (or ``readOnlyHint: true``) says otherwise.
    """

    def flag(snake: str, camel: str) -> bool | None:
        # mcp 2.x names the fields in snake_case; older SDKs and raw dicts in camelCase.
        if isinstance(annotations, Mapping):
            value = annotations.get(camel, annotations.get(snake))
        else:
            value = getattr(annotations, snake, None)
            if value is None:
                value = getattr(annotations, camel, None)
        return value if isinstance(value, bool) else None

    read_only = flag("read_only_hint", "readOnlyHint") is True
    # The spec: destructiveHint is meaningful only when readOnlyHint is false, and
    # defaults to true. Anything but an explicit false (or a read-only tool) destroys.
    destructive = not read_only and flag("destructive_hint", "destructiveHint") is not False
    destructive = destructive or flag("destructive_hint", "destructiveHint") is True
    return {
        "read_only": read_only and not destructive,
        "destructive": destructive,
        "open_world": flag("open_world_hint", "openWorldHint") is True,
    }


class MCPTool(AgentTool):
    """One tool of one MCP server, registered as ``mcp__<server>__<tool>``."""

    def __init__(
        self,
        *,
        caller: ToolCaller,
        server: str,
        remote_name: str,
        description: str | None,
        input_schema: Mapping[str, Any] | None,
        defer: bool,
        timeout: float,
        annotations: Any = None,
        destructive_needs_approval: bool = True,
        output_schema: Mapping[str, Any] | None = None,
        expose: bool = True,
    ) -> None:
        hints = _hints(annotations)
        super().__init__(
            name=mcp_tool_name(server, remote_name),
            description=_clean_description(description),
            parameters=_object_schema(input_schema),
            label=f"{remote_name} ({server})",
            source="mcp",
            server=server,
            package=f"mcp:{server}",
            defer=defer,
            expose=expose,
            # No policy timeout: the connection bounds the server's time itself and
            # stops that clock while a person answers the server's question.
            timeout=None,
            # Hints from an untrusted server only ever restrict: plan mode offers a tool
            # only when it says it reads only (and not also that it destroys), and a
            # destructive tool asks first unless the operator turned that off.
            unsafe_in=frozenset() if hints["read_only"] else frozenset({"plan"}),
            requires_approval=hints["destructive"] and destructive_needs_approval,
        )
        self.hints = hints
        self.remote_name = remote_name
        self.server_timeout = timeout
        """Seconds the server may work on one call (time spent asking a person excluded)."""
        self.output_schema = dict(output_schema) if isinstance(output_schema, Mapping) else None
        self._caller = caller

    @classmethod
    def from_listing(cls, *, caller: ToolCaller, config: MCPServerConfig, listed: Any) -> MCPTool:
        """The tool for one entry of a server's ``tools/list``, with the server's settings."""
        return cls(
            caller=caller,
            server=config.name,
            remote_name=listed.name,
            description=listed.description,
            input_schema=listed.input_schema,
            defer=not config.always_load,
            timeout=config.timeout,
            annotations=listed.annotations,
            destructive_needs_approval=not config.destructive_without_approval,
            output_schema=listed.output_schema,
            expose=config.expose,
        )

    async def execute(
        self,
        call_id: str,
        args: dict[str, Any] | str,
        cancel: asyncio.Event | None = None,
        on_update: OnUpdate | None = None,
    ) -> AgentToolResult:
        started = time.monotonic()

        def finish(result: AgentToolResult) -> AgentToolResult:
            result.duration_ms = (time.monotonic() - started) * 1000
            return result

        try:
            # The rules every kind of tool shares; here too because hosts (and the
            # conformance client) call ``execute`` directly, outside the agent loop.
            args = prepare_arguments(self, args)
        except InvalidArguments as exc:
            return finish(AgentToolResult(str(exc), is_error=True))

        stream = TailAccumulator(self.stream_capacity_chars or self.max_result_chars)
        loop = asyncio.get_running_loop()
        updates = _UpdateRelay(loop, stream, on_update)
        turn = get_turn()
        elicitor = CallElicitor(
            loop=loop,
            hook=turn.elicitation_hook if turn is not None else None,
            server=self.server or "",
            tool_call_id=call_id,
            owner=turn if turn is not None else object(),
            on_refusal=updates.note,
        )
        call = asyncio.ensure_future(
            self._caller.call(
                self.server or "",
                self.remote_name,
                args,
                timeout=self.server_timeout,
                on_progress=updates.from_server,
                elicitor=elicitor,
            )
        )
        try:
            if cancel is not None and not await _first_of(call, cancel):
                call.cancel()
                await updates.drain()
                return finish(AgentToolResult(f"{self.name!r} was cancelled", is_error=True))
            result = await call
        except MCPCallError as exc:
            await updates.drain()
            tail = stream.text()
            details = {"progress": tail} if tail else None
            return finish(AgentToolResult(str(exc), is_error=True, details=details))
        except Exception as exc:
            # A malformed answer (or an SDK bug) must end this call, not the turn.
            logger.exception("MCP tool %r failed unexpectedly", self.name)
            message = f"MCP tool {self.name!r} failed: {type(exc).__name__}: {exc}"
            return finish(AgentToolResult(message, is_error=True))
        finally:
            if not call.done():
                call.cancel()
        await updates.drain()
        # The SDK has already checked structured content against the output schema.
        structured = self.output_schema is not None and not result.is_error
        text, attachments = _result_parts(result, structured_as_json=structured)
        # The full text: the dispatcher's call policy caps and persists it (call_policy.py).
        return finish(
            AgentToolResult(
                content=text,
                is_error=bool(result.is_error),
                details=result.structured_content,
                attachments=attachments,
            )
        )


async def _first_of(call: asyncio.Future[Any], cancel: asyncio.Event) -> bool:
    """Wait for ``call`` or ``cancel``; True when the call finished first."""
    waiter = asyncio.ensure_future(cancel.wait())
    try:
        await asyncio.wait({call, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
    return call.done()


class _UpdateRelay:
    """Carries progress from the manager's loop thread to the caller's loop.

    Progress arrives on the manager's event loop; ``on_update`` must run on the
    loop that called :meth:`MCPTool.execute`. Each message also goes into a
    bounded tail so an error result can say how far the call got.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        stream: TailAccumulator,
        on_update: OnUpdate | None,
    ) -> None:
        self._loop = loop
        self._stream = stream
        self._on_update = on_update
        self._pending: set[asyncio.Future[Any]] = set()

    async def from_server(self, progress: float, total: float | None, message: str | None) -> None:
        await self.note(_progress_text(progress, total, message))

    async def note(self, text: str) -> None:
        """One line of live output, from the manager's loop."""
        # The caller's loop may be gone (the turn ended); progress is best-effort.
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._deliver, text)

    def _deliver(self, text: str) -> None:
        self._stream.append(text + "\n")
        if self._on_update is None:
            return
        try:
            outcome = self._on_update(text)
        except Exception:
            logger.exception("on_update raised while relaying MCP progress")
            return
        if inspect.isawaitable(outcome):
            future = asyncio.ensure_future(outcome)
            self._pending.add(future)
            future.add_done_callback(self._pending.discard)

    async def drain(self) -> None:
        """Let updates already scheduled run, so they arrive before the result."""
        await asyncio.sleep(0)
        if self._pending:
            await asyncio.gather(*self._pending, return_exceptions=True)
