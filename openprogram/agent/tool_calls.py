"""Running one tool call the model asked for, with its start/update/finish events.

Whatever goes wrong (an unknown name, arguments that are not JSON or do not
match the schema, a tool that raises) becomes an ``is_error`` result the model
can act on; nothing here raises into the loop.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema

from openprogram.agent.events import Event, ToolCallStarted, ToolFinished, ToolUpdate
from openprogram.agent.types import AgentTool, AgentToolResult, ToolCall
from openprogram.programs.call_policy import dispatch_tool_call
from openprogram.programs.deferred import loaded_deferred, mark_deferred_loaded

__all__ = ["PREVIEW_CHARS", "ToolCallOutcome", "parse_arguments", "run_tool_call"]

PREVIEW_CHARS = 2_000

_log = logging.getLogger(__name__)


@dataclass
class ToolCallOutcome:
    call: ToolCall
    result: AgentToolResult
    invalid_arguments: bool = False
    """True when the call never ran because its arguments were malformed or off-schema."""


@functools.lru_cache(maxsize=1024)
def _validator(schema_json: str) -> jsonschema.protocols.Validator | None:
    """A validator per distinct schema (checking a schema costs milliseconds; do it once)."""
    schema = json.loads(schema_json)
    validator_class = jsonschema.validators.validator_for(schema)
    try:
        validator_class.check_schema(schema)
    except jsonschema.SchemaError:
        # A broken schema (e.g. from an MCP server) is the tool's problem; let it judge.
        return None
    return validator_class(schema)


def parse_arguments(tool: AgentTool, arguments: str | dict[str, Any]) -> dict[str, Any]:
    """The call's arguments as a dict that matches the tool's schema, or ValueError saying why."""
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments or "{}")
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"arguments for {tool.name!r} are not valid JSON ({exc.msg} at position "
                f"{exc.pos}): {arguments[:200]!r}"
            ) from None
    else:
        parsed = arguments
    if not isinstance(parsed, dict):
        raise ValueError(f"arguments for {tool.name!r} must be a JSON object, got {parsed!r:.200}")
    validator = _validator(json.dumps(tool.parameters, sort_keys=True))
    if validator is None:
        return parsed
    errors = sorted(validator.iter_errors(parsed), key=str)
    if errors:
        first = errors[0]
        where = "/".join(str(part) for part in first.absolute_path) or "(top level)"
        raise ValueError(f"invalid arguments for {tool.name!r} at {where}: {first.message}")
    return parsed


def _not_offered(name: str, offered: Mapping[str, AgentTool]) -> AgentToolResult:
    names = ", ".join(sorted(offered)) or "none"
    return AgentToolResult(
        content=f"tool {name!r} is not offered in this turn; offered: {names}", is_error=True
    )


async def _execute(
    tool: AgentTool,
    call: ToolCall,
    args: dict[str, Any],
    cancel: asyncio.Event,
    sink: Callable[[Event], None],
) -> AgentToolResult:
    def on_update(chunk: str) -> None:
        if chunk:
            sink(ToolUpdate(call_id=call.id, text=str(chunk)))

    # The one enforcement point: approval, budget, cancel, caps, stream, cache. It turns a
    # tool's exception or non-result into an error result itself, so nothing to catch here.
    return await dispatch_tool_call(tool, call.id, args, cancel, on_update)


def _display_arguments(arguments: str | dict[str, Any]) -> dict[str, Any] | str:
    if isinstance(arguments, dict):
        return arguments
    try:
        parsed = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return arguments
    return parsed if isinstance(parsed, dict) else arguments


async def run_tool_call(
    call: ToolCall,
    *,
    offered: Mapping[str, AgentTool],
    sink: Callable[[Event], None],
    cancel: asyncio.Event,
) -> ToolCallOutcome:
    """Run ``call`` against the turn's ``offered`` tools, emitting its events."""
    started = time.perf_counter()
    sink(
        ToolCallStarted(
            call_id=call.id, name=call.name, arguments=_display_arguments(call.arguments)
        )
    )
    tool = offered.get(call.name)
    invalid = False
    if tool is None:
        result = _not_offered(call.name, offered)
    else:
        if tool.defer and tool.name not in loaded_deferred():
            # The model knew the name from the catalog; load it rather than bounce the call.
            mark_deferred_loaded([tool.name])
        try:
            args = parse_arguments(tool, call.arguments)
        except ValueError as exc:
            invalid = True
            result = AgentToolResult(content=str(exc), is_error=True)
        else:
            result = await _execute(tool, call, args, cancel, sink)
    duration_ms = result.duration_ms or (time.perf_counter() - started) * 1000
    sink(
        ToolFinished(
            call_id=call.id,
            name=call.name,
            preview=result.content[:PREVIEW_CHARS],
            is_error=result.is_error,
            truncated=result.truncated,
            full_result_path=result.full_result_path,
            duration_ms=round(duration_ms, 3),
        )
    )
    return ToolCallOutcome(call=call, result=result, invalid_arguments=invalid)
