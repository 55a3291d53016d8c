"""Running one tool call the model asked for, with its start/update/finish events.

Whatever goes wrong (an unknown name, arguments that are not JSON or do not
match the schema, a tool that raises) becomes an ``is_error`` result the model
can act on; nothing here raises into the loop.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from openprogram.agent.events import Event, ToolCallStarted, ToolFinished, ToolUpdate
from openprogram.agent.types import AgentTool, AgentToolResult, ToolCall
from openprogram.programs.arguments import InvalidArguments, prepare_arguments
from openprogram.programs.call_policy import dispatch_tool_call
from openprogram.programs.deferred import loaded_deferred, mark_deferred_loaded

__all__ = ["PREVIEW_CHARS", "ToolCallOutcome", "run_tool_call"]

PREVIEW_CHARS = 2_000

_log = logging.getLogger(__name__)


@dataclass
class ToolCallOutcome:
    call: ToolCall
    result: AgentToolResult
    invalid_arguments: bool = False
    """True when the call never ran because its arguments were malformed or off-schema."""


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
    """Run ``call`` against the turn's ``offered`` tools, emitting its events.

    The call is announced with the arguments the tool is given (a null that means "not
    given" already dropped, ``openprogram.programs.arguments``), so the trace and the
    run history show what the approval prompt is about and what runs.
    """
    started = time.perf_counter()

    def announce(arguments: dict[str, Any] | str) -> None:
        sink(ToolCallStarted(call_id=call.id, name=call.name, arguments=arguments))

    tool = offered.get(call.name)
    invalid = False
    if tool is None:
        announce(_display_arguments(call.arguments))
        result = _not_offered(call.name, offered)
    else:
        if tool.defer and tool.name not in loaded_deferred():
            # The model knew the name from the catalog; load it rather than bounce the call.
            mark_deferred_loaded([tool.name])
        try:
            args = prepare_arguments(tool, call.arguments)
        except InvalidArguments as exc:
            invalid = True
            announce(_display_arguments(call.arguments))
            result = AgentToolResult(content=str(exc), is_error=True)
        else:
            announce(args)
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
            verdict=result.verdict,
            rule=result.rule,
        )
    )
    return ToolCallOutcome(call=call, result=result, invalid_arguments=invalid)
