"""The per-tool call policy: the one place every tool call's guarantees are enforced.

Whatever class a tool is — an ``@function`` (``FunctionTool``), an Agent method, a
plugin's own ``AgentTool`` subclass, an MCP tool — its call runs through
:func:`run_with_policy`, in this order:

1. **policy and approval**: the team policy's verdict on this call
   (``call_rules.call_decision``: the turn's rules over the tool's default, which is
   ask when ``requires_approval`` says so — a raising predicate means "ask"). Deny is
   an error result naming the rule; ask goes to the turn's approval hook, bound to
   this call id and these arguments; no turn, no hook, an unattended turn or a
   failing hook means denied (fail closed). Either way the body never runs. The body
   then runs inside ``call_rules.deciding``, so a redirect it follows is decided too;
2. **cache**: with ``cache=True`` an earlier successful result for the same canonical
   arguments is returned (``cache_ttl`` seconds at most);
3. **budget and cancel**: the body runs under the clamped timeout (the model's
   ``timeout`` argument, else the tool's, clamped into ``[timeout_min, timeout_max]``)
   and is raced against the cancel event; a body that ignores both is abandoned after
   a 0.5 s grace, so the call returns promptly either way;
4. **bounded streaming**: ``on_update`` reaches the caller through an ``UpdateStream``
   whose tail is bounded by ``stream_capacity_chars`` (default ``max_result_chars``);
5. **result**: anything the body returns (or raises) becomes an ``AgentToolResult``;
   its text is capped head+tail under ``min(max_result_chars, 0.3 * context window)``
   with the full text persisted for the current user when ``persist_full``; error text
   has absolute server paths redacted.

:func:`dispatch_tool_call` is what the agent loop calls. It first drops the nulls that
mean "not given" (:func:`openprogram.programs.arguments.drop_unset_nulls`), so approval,
the cache key and the body all see the arguments as they run. Tools whose ``execute``
already runs this pipeline (``FunctionTool``, so a library user calling it directly
gets the same guarantees) are called as they are; every other tool's ``execute`` is
wrapped. Either way each guarantee is applied exactly once per call.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from openprogram.agent.types import AgentTool, AgentToolResult, OnUpdate
from openprogram.programs._approval import _evaluate_approval
from openprogram.programs._cache import ResultCache, canonical_arguments
from openprogram.programs._streaming import UpdateStream
from openprogram.programs.arguments import drop_unset_nulls
from openprogram.programs.call_rules import call_decision, deciding
from openprogram.programs.results import _normalize_result, cap_result_text
from openprogram.security.redact import redact_server_paths

__all__ = ["Body", "PolicyTool", "dispatch_tool_call", "run_with_policy"]

_log = logging.getLogger(__name__)
_CANCEL_GRACE_S = 0.5
"""How long a cancelled body may take to unwind before the call returns anyway."""

Body = Callable[[OnUpdate, asyncio.Event, threading.Event, "float | None"], Awaitable[Any]]
"""Runs the tool itself: ``(on_update, cancel, thread_cancel, budget) -> value``."""
_Ending = Literal["done", "cancelled", "timeout"]

_caches: weakref.WeakKeyDictionary[AgentTool, ResultCache] = weakref.WeakKeyDictionary()


class PolicyTool:
    """Marker: this tool's ``execute`` runs :func:`run_with_policy` itself."""


class BodyExited(Exception):
    """A body raised SystemExit; re-raised as this so it cannot stop the server."""


def _clamp(value: float, low: float | None, high: float | None) -> float:
    if low is not None:
        value = max(low, value)
    if high is not None:
        value = min(high, value)
    return value


def call_budget(tool: AgentTool, requested: Any = None) -> float | None:
    """Seconds this call may take: the model's request or the tool's timeout, clamped."""
    valid = isinstance(requested, int | float) and not isinstance(requested, bool)
    budget = requested if valid else tool.timeout
    if budget is None:
        return None
    return float(_clamp(float(budget), tool.timeout_min, tool.timeout_max))


def error_result(tool: AgentTool, text: str, *, call_id: str) -> AgentToolResult:
    capped = cap_result_text(redact_server_paths(text), tool=tool, call_id=call_id)
    return AgentToolResult(
        content=capped.text,
        is_error=True,
        truncated=capped.truncated,
        dropped_chars=capped.dropped_chars,
        full_result_path=capped.full_result_path,
    )


async def run_with_policy(
    tool: AgentTool,
    *,
    call_id: str,
    args: dict[str, Any],
    cancel: asyncio.Event | None,
    on_update: OnUpdate | None,
    body: Body,
    requested_timeout: Any = None,
) -> AgentToolResult:
    """Apply the policy (module doc) around ``body``; never raises for a tool's failure."""
    started = time.perf_counter()
    verdict = call_decision(tool, args)
    decision = await _evaluate_approval(tool, call_id=call_id, args=args, policy=verdict)
    cache = _cache_for(tool)
    cache_key = (tool.name, canonical_arguments(args)) if cache is not None else None
    if verdict.verdict == "deny":
        refused = (
            f"The call to {tool.name!r} was refused by policy: {verdict.words}. It was not run."
        )
        result = error_result(tool, refused, call_id=call_id)
    elif not decision.approved:
        reason = f": {decision.reason}" if decision.reason else ""
        denied = f"The user denied the call to {tool.name!r}{reason}. It was not run."
        result = error_result(tool, denied, call_id=call_id)
    elif cache is not None and (hit := cache.get(cache_key)) is not None:
        result = dataclasses.replace(hit)
    else:
        with deciding(tool, args, verdict):
            result = await _run_body(tool, call_id, cancel, on_update, body, requested_timeout)
        if cache is not None and cache_key is not None and not result.is_error:
            cache.put(cache_key, dataclasses.replace(result))
    result.duration_ms = (time.perf_counter() - started) * 1000
    # For the audit trail: set here, after the body, so no tool can claim a verdict.
    result.verdict = verdict.verdict
    result.rule = verdict.words if verdict.source != "default" else ""
    return result


def _cache_for(tool: AgentTool) -> ResultCache | None:
    if not tool.cache:
        return None
    cache = _caches.get(tool)
    if cache is None:
        cache = _caches[tool] = ResultCache(ttl=tool.cache_ttl)
    return cache


async def _run_body(
    tool: AgentTool,
    call_id: str,
    cancel: asyncio.Event | None,
    on_update: OnUpdate | None,
    body: Body,
    requested_timeout: Any,
) -> AgentToolResult:
    loop = asyncio.get_running_loop()
    cancel_event = cancel if cancel is not None else asyncio.Event()
    thread_cancel = threading.Event()
    stream = UpdateStream(
        loop=loop,
        capacity=tool.stream_capacity_chars or tool.max_result_chars,
        consumer=on_update,
        tool_name=tool.name,
    )
    budget = call_budget(tool, requested_timeout)
    work = _contain_exit(body(stream.emit, cancel_event, thread_cancel, budget))
    try:
        if cancel is None and budget is None:
            ending, value = await _await_plainly(work, thread_cancel)
        else:
            ending, value = await _race(work, cancel_event, thread_cancel, budget)
    except Exception as exc:
        await stream.flush()
        _log.exception("tool %r (call %r) raised", tool.name, call_id)
        kind = "SystemExit" if isinstance(exc, BodyExited) else type(exc).__name__
        return error_result(tool, f"{kind}: {exc}", call_id=call_id)
    await stream.flush()
    if ending == "timeout":
        return error_result(
            tool,
            f"Tool {tool.name!r} timed out after {budget:g} s" + _partial(stream),
            call_id=call_id,
        )
    if ending == "cancelled":
        return error_result(
            tool, f"Tool {tool.name!r} was cancelled" + _partial(stream), call_id=call_id
        )
    return _finish(tool, value, stream=stream, call_id=call_id)


def _finish(tool: AgentTool, value: Any, *, stream: UpdateStream, call_id: str) -> AgentToolResult:
    try:
        text, details, persist = _normalize_result(value)
    except Exception as exc:
        _log.exception("tool %r returned a value that cannot be shown", tool.name)
        return error_result(tool, f"{type(exc).__name__}: {exc}", call_id=call_id)
    returned = value if isinstance(value, AgentToolResult) else None
    if not text and len(stream.tail) and not (returned and returned.attachments):
        text = stream.tail.text()  # a tool that only streamed: its output is the result
    if returned is not None and returned.is_error:
        text = redact_server_paths(text)
    capped = cap_result_text(text, tool=tool, call_id=call_id, persist=persist)
    return AgentToolResult(
        content=capped.text,
        is_error=returned.is_error if returned else False,
        details=details,
        truncated=capped.truncated or bool(returned and returned.truncated),
        dropped_chars=capped.dropped_chars or (returned.dropped_chars if returned else 0),
        full_result_path=capped.full_result_path
        or (returned.full_result_path if returned else None),
        attachments=list(returned.attachments) if returned else [],
    )


async def dispatch_tool_call(
    tool: AgentTool,
    call_id: str,
    args: dict[str, Any],
    cancel: asyncio.Event | None = None,
    on_update: OnUpdate | None = None,
) -> AgentToolResult:
    """Run one call of ``tool`` with the policy applied exactly once, whatever its class."""
    # Before approval: what a person approves must be what runs. (The agent loop has
    # done this already; then it is a no-op.)
    args = drop_unset_nulls(tool.parameters, args)
    if isinstance(tool, PolicyTool):
        return await tool.execute(call_id, args, cancel, on_update)

    async def body(
        update: OnUpdate, cancel_event: asyncio.Event, _thread: threading.Event, _budget: Any
    ) -> Any:
        try:
            result = await tool.execute(call_id, args, cancel_event, update)
        except (asyncio.CancelledError, SystemExit):
            raise
        except Exception as exc:
            _log.exception("tool %r raised on call %r", tool.name, call_id)
            message = f"tool {tool.name!r} failed: {type(exc).__name__}: {exc}"
            return AgentToolResult(content=message, is_error=True)
        if not isinstance(result, AgentToolResult):
            message = f"tool {tool.name!r} returned {type(result).__name__!r}, not a result"
            return AgentToolResult(content=message, is_error=True)
        return result

    requested = args.get("timeout") if _model_may_set_timeout(tool) else None
    return await run_with_policy(
        tool,
        call_id=call_id,
        args=args,
        cancel=cancel,
        on_update=on_update,
        body=body,
        requested_timeout=requested,
    )


def _model_may_set_timeout(tool: AgentTool) -> bool:
    properties = (tool.parameters or {}).get("properties") or {}
    return "timeout" in properties and (
        tool.timeout_min is not None or tool.timeout_max is not None
    )


async def _contain_exit(work: Awaitable[Any]) -> Any:
    try:
        return await work
    except SystemExit as exc:
        raise BodyExited(exc.code) from None


async def _await_plainly(
    work: Awaitable[Any], thread_cancel: threading.Event
) -> tuple[_Ending, Any]:
    """No budget and no cancel event to watch: just await (the fast path)."""
    try:
        return "done", await work
    except asyncio.CancelledError:
        thread_cancel.set()  # the call itself was cancelled: tell a sync body
        raise


async def _race(
    work: Awaitable[Any],
    cancel_event: asyncio.Event,
    thread_cancel: threading.Event,
    budget: float | None,
) -> tuple[_Ending, Any]:
    """Await ``work`` unless the budget runs out or ``cancel_event`` fires first."""
    task = asyncio.ensure_future(work)
    cancel_wait = asyncio.ensure_future(cancel_event.wait())
    try:
        done, _ = await asyncio.wait(
            {task, cancel_wait}, timeout=budget, return_when=asyncio.FIRST_COMPLETED
        )
    except GeneratorExit:
        # The loop is closing this coroutine: stop the body, but await nothing more.
        _abandon(task, cancel_wait, thread_cancel)
        raise
    except asyncio.CancelledError:
        # The call itself was cancelled (the turn stopped): stop the body too.
        _abandon(task, cancel_wait, thread_cancel)
        await asyncio.wait({task}, timeout=_CANCEL_GRACE_S)
        raise
    cancel_wait.cancel()
    if task in done:
        return "done", task.result()
    if cancel_wait not in done:
        cancel_event.set()  # a timeout cancels the call like Stop does
    _abandon(task, cancel_wait, thread_cancel)
    await asyncio.wait({task}, timeout=_CANCEL_GRACE_S)
    return ("cancelled" if cancel_wait in done else "timeout"), None


def _abandon(
    task: asyncio.Future[Any], cancel_wait: asyncio.Future[Any], thread_cancel: threading.Event
) -> None:
    cancel_wait.cancel()
    thread_cancel.set()
    task.cancel()
    task.add_done_callback(_consume_outcome)


def _partial(stream: UpdateStream) -> str:
    return f"\nOutput so far:\n{stream.tail.text()}" if len(stream.tail) else ""


def _consume_outcome(task: asyncio.Future[Any]) -> None:
    # A body that outlived its call: read its outcome so asyncio does not warn.
    if not task.cancelled():
        task.exception()
