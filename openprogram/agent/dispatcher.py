"""One user turn, end to end: resolve tools, run the agent loop, stream events out.

Follows the spec's "Resolution path (dispatcher → provider)": the per-turn
toggles become resolution arguments (layers 2b-5, only available tools), the
layer-6 state is seeded with the turn's tools, the deferred catalog goes into the
system prompt, and :func:`~openprogram.agent.loop.agent_loop` does the rest.

All per-turn state (the TurnContext, the loaded-deferred set, the result
ceiling) lives in ContextVars set inside a task of its own, so concurrent turns
never see each other's state and nothing leaks into the caller.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from openprogram.agent.approvals import approval_hook_for_turn, question_hook_for_turn
from openprogram.agent.context import TurnContext, current_turn
from openprogram.agent.elicitation import elicitation_hook_for_turn
from openprogram.agent.events import (
    Event,
    ToolsResolved,
    TurnError,
    TurnFinished,
    TurnRequest,
)
from openprogram.agent.loop import DeltaTaker, StreamChat, StreamReader, agent_loop
from openprogram.agent.types import AgentTool, Message
from openprogram.programs.deferred import deferred_catalog_text, install_loaded_deferred
from openprogram.programs.policy import Resolution, UnknownToolsetError, resolve_tools
from openprogram.programs.results import set_context_window_chars
from openprogram.providers.context_window import context_window_chars, context_window_chars_known
from openprogram.providers.retry import RetryPolicy
from openprogram.providers.streaming import ProviderDelta
from openprogram.telemetry import turn_trace

__all__ = ["DEFAULT_SYSTEM_PROMPT", "build_messages", "process_user_turn", "resolve_turn_tools"]

DEFAULT_SYSTEM_PROMPT = (
    "You are OpenProgram, a helpful assistant that can call functions (tools). "
    "Call a tool when it helps answer the user; otherwise answer directly and concisely."
)

_log = logging.getLogger(__name__)
_END = object()


class _ModelStream:
    """A model call's deltas, queued in event order for :func:`process_user_turn`'s
    consumer to read in its own task; the turn waits on ``done``."""

    __slots__ = ("deltas", "done", "take")

    def __init__(
        self, deltas: AsyncIterator[ProviderDelta], take: DeltaTaker, done: asyncio.Future[None]
    ) -> None:
        self.deltas = deltas
        self.take = take
        self.done = done


def resolve_turn_tools(request: TurnRequest) -> Resolution:
    """Layers 2-5 for this turn, with the composer's toggles applied.

    Tools off is the ``"none"`` toolset; web search off is a deny; plan mode is
    the ``plan`` channel (layer 3); unattended withholds ask_user_question (L5).
    """
    deny = list(request.deny or [])
    if not request.web_search_on:
        deny.append("web_search")
    return resolve_tools(
        toolset="none" if not request.tools_on else request.toolset,
        profile=request.profile_tools,
        source="plan" if request.plan_mode else request.source,
        only_available=True,
        allow=request.allow,
        deny=deny or None,
        disabled=request.disabled,
        attended=request.attended,
        can_use_context=request.can_use_context,
        named_profiles=request.named_profiles,
        policy=request.policy,
    )


def build_messages(request: TurnRequest, tools: list[AgentTool]) -> list[Message]:
    """System prompt (+ deferred catalog), earlier user/assistant text, the new message.

    History is text only by construction: tool results live in run history, never
    in a later prompt (spec, first section).
    """
    system = (request.system_prompt or DEFAULT_SYSTEM_PROMPT).strip()
    catalog = deferred_catalog_text(tools)
    if catalog:
        system = f"{system}\n\n{catalog}"
    history = [
        Message(role=item.role, content=item.content)
        for item in request.history
        if item.role in ("user", "assistant") and item.content
    ]
    return [
        Message(role="system", content=system),
        *history,
        Message(role="user", content=request.text),
    ]


def _finish_with_error(sink: Callable[[Event], None], message: str, kind: str) -> None:
    sink(TurnError(message=message, kind=kind))
    sink(TurnFinished(stop_reason="error"))


async def _run_turn(
    request: TurnRequest,
    sink: Callable[[Event], None],
    retry: RetryPolicy | None,
    provider: StreamChat | None,
    read_stream: StreamReader | None,
) -> None:
    try:
        resolution = resolve_turn_tools(request)
    except (UnknownToolsetError, ValueError) as exc:
        _finish_with_error(sink, f"cannot resolve this turn's tools: {exc}", "tools")
        return
    tools = list(resolution.tools)
    sink(
        ToolsResolved(
            tools=[tool.name for tool in tools if not tool.defer],
            deferred=[tool.name for tool in tools if tool.defer],
            explain=resolution.explain(),
            warnings=list(resolution.warnings),
            model=request.model,
        )
    )
    window_chars = context_window_chars_known(request.model)
    if window_chars is None:
        try:
            window_chars = await asyncio.to_thread(context_window_chars, request.model)
        except ValueError as exc:
            _finish_with_error(sink, str(exc), "provider_bad_request")
            return

    async def emit(event: Any) -> None:
        sink(event)

    install_loaded_deferred(tools=tools)
    set_context_window_chars(window_chars)
    current_turn.set(
        TurnContext(
            user_id=request.user_id,
            conversation_id=request.conversation_id,
            workspace=request.workspace,
            source=request.source,
            attended=request.attended,
            model=request.model,
            approval_hook=approval_hook_for_turn(
                host_hook=request.approval_hook,
                attended=request.attended,
                emit=emit,
                timeout=request.approval_timeout,
            ),
            question_hook=question_hook_for_turn(
                host_hook=request.question_hook,
                attended=request.attended,
                emit=emit,
                timeout=request.approval_timeout,
            ),
            elicitation_hook=elicitation_hook_for_turn(
                host_hook=request.elicitation_hook,
                attended=request.attended,
                emit=emit,
                timeout=request.approval_timeout,
            ),
            emit=emit,
            state=request.state,
            named_profiles=request.named_profiles,
            budget_check=request.budget_check,
            policy=request.policy,
        )
    )
    outcome = await agent_loop(
        model=request.model,
        messages=build_messages(request, tools),
        tools=tools,
        sink=sink,
        cancel=request.cancel,
        max_steps=request.max_steps,
        retry=retry,
        provider=provider,
        budget_check=request.budget_check,
        read_stream=read_stream,
    )
    sink(
        TurnFinished(
            stop_reason=outcome.stop_reason,
            usage=outcome.usage,
            text=outcome.text,
            steps=outcome.steps,
            cost_usd=outcome.cost_usd,
            price_known=outcome.price_known,
        )
    )


async def process_user_turn(
    request: TurnRequest,
    *,
    retry: RetryPolicy | None = None,
    provider: StreamChat | None = None,
) -> AsyncIterator[Event]:
    """Run one turn and yield its events; the last one is always a :class:`TurnFinished`.

    Never raises for a bad request, a failing model or tool: those arrive as
    :class:`TurnError` events. Closing the iterator early stops the turn.
    ``retry`` overrides the provider retry policy (default: from the environment);
    ``provider`` replaces the litellm path with another model (see ``StreamChat``).
    """
    queue: asyncio.Queue[Any] = asyncio.Queue()

    async def read_stream(deltas: AsyncIterator[ProviderDelta], take: DeltaTaker) -> None:
        done = asyncio.get_running_loop().create_future()
        queue.put_nowait(_ModelStream(deltas, take, done))
        await done

    # The turn runs in its own task: events from concurrently running tools, the
    # model stream and approval prompts all land in one queue, in order. The model's
    # stream (the default provider's, which needs none of the turn's context
    # variables) is read here, in the consumer's task, while the turn waits: a
    # streamed piece then wakes one task, not the turn's and then this one.
    task = asyncio.create_task(
        _run_turn(
            request, queue.put_nowait, retry, provider, read_stream if provider is None else None
        )
    )
    task.add_done_callback(lambda _: queue.put_nowait(_END))
    finished = False
    trace = turn_trace(request)
    try:
        while True:
            item = await queue.get()
            if item is _END:
                break
            if type(item) is _ModelStream:
                try:
                    async with contextlib.aclosing(item.deltas) as deltas:
                        async for delta in deltas:
                            event = item.take(delta)
                            if event is not None:
                                if trace is not None:
                                    trace.observe(event)
                                yield event
                except Exception as error:  # the turn handles it (a ProviderError: TurnError)
                    if not item.done.done():
                        item.done.set_exception(error)
                except BaseException:  # closed or cancelled here: the turn is stopped below
                    item.done.cancel()
                    raise
                else:
                    if not item.done.done():
                        item.done.set_result(None)
                continue
            finished = finished or isinstance(item, TurnFinished)
            if trace is not None:
                trace.observe(item)
            yield item
        if not finished:
            error = task.exception() if not task.cancelled() else None
            _log.error("turn crashed", exc_info=error)
            crash = TurnError(
                message=f"internal error: {type(error).__name__}: {error}", kind="internal"
            )
            if trace is not None:
                trace.observe(crash)
            yield crash
            yield TurnFinished(stop_reason="error")
    finally:
        if trace is not None:
            trace.finish()
        if not task.done():
            request.cancel.set()
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
