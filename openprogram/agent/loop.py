"""The inner tool-call loop of one turn: ask the model, run its tool calls, feed results back.

Each provider call first re-splits the turn's tools (layer 6), so a tool loaded
by ``tool_search`` in one step ships its schema in the next request. Tool calls
of one step run concurrently; their events stream out as they happen. The loop
ends when the model answers without tool calls, at the step limit, on a
terminal error, or promptly when ``cancel`` is set.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from openprogram.agent.events import Event, ModelCallFinished, TextDelta, ToolFinished, TurnError
from openprogram.agent.tool_calls import ToolCallOutcome, run_tool_call
from openprogram.agent.types import AgentTool, AgentToolResult, Message, ToolCall
from openprogram.agent.usage import UsageMeter
from openprogram.programs.deferred import split_tools_for_dispatch
from openprogram.providers.pricing import call_cost
from openprogram.providers.retry import ProviderError, RetryPolicy
from openprogram.providers.streaming import ProviderDelta, stream_chat

__all__ = [
    "DEFAULT_MAX_STEPS",
    "DEFAULT_VALIDATION_BUDGET",
    "DeltaTaker",
    "LoopOutcome",
    "StreamChat",
    "StreamReader",
    "agent_loop",
]

DEFAULT_MAX_STEPS = 25
DEFAULT_VALIDATION_BUDGET = 3
"""Consecutive invalid-argument calls of one tool before the turn gives up on it."""
_STOPPED_CALL_WAIT_S = 0.75
"""How long a stopped step waits for its calls to return on their own: a little over the
call policy's cancel grace (0.5 s), after which a call reports its partial output."""

EventSink = Callable[[Event], None]
StreamChat = Callable[..., AsyncIterator[ProviderDelta]]
"""A model: ``stream_chat``'s keyword signature. The default goes through litellm;
a host may pass its own (a scripted stand-in in benchmarks, a non-litellm client)."""
DeltaTaker = Callable[[ProviderDelta], TextDelta | None]
"""Records one delta of a model call in the turn; the event to send for it, if any."""
StreamReader = Callable[[AsyncIterator[ProviderDelta], DeltaTaker], Awaitable[None]]
"""Reads a model call's deltas to the end, passing each to the taker and sending the
events it returns, in order, itself (see :func:`agent_loop`'s ``read_stream``)."""
StopReason = Literal["completed", "stopped", "step_limit", "error", "budget"]
BudgetCheck = Callable[[float], Awaitable[str | None]]


@dataclass
class LoopOutcome:
    stop_reason: StopReason
    text: str = ""
    usage: dict[str, int] = field(default_factory=dict)
    steps: int = 0
    cost_usd: float = 0.0
    price_known: bool = True


def _model_content(result: AgentToolResult) -> str:
    # The wire has no error flag for tool messages; say it in the text the model reads.
    content = result.content or ""
    if result.is_error and not content.lower().startswith("error"):
        return f"Error: {content}"
    return content


class _Turn:
    """Mutable state of one loop run, so the steps read as a short story."""

    def __init__(
        self,
        *,
        tools: Sequence[AgentTool],
        sink: EventSink,
        cancel: asyncio.Event,
        provider: StreamChat,
        read_stream: StreamReader | None = None,
    ):
        self.provider = provider
        self.read_stream = read_stream
        self.tools = list(tools)
        self.offered = {tool.name: tool for tool in self.tools}
        self.sink = sink
        self.cancel = cancel
        self.text: list[str] = []
        self.usage: Counter[str] = Counter()
        self.cost = 0.0
        self.price_known = True
        self.steps_priced = 0
        self.meter = UsageMeter()
        self.invalid_streak: Counter[str] = Counter()

    def outcome(self, reason: StopReason, steps: int) -> LoopOutcome:
        return LoopOutcome(
            reason, "".join(self.text), dict(self.usage), steps, self.cost, self.price_known
        )

    async def ask_model(
        self, *, model: str, messages: list[Message], retry: RetryPolicy | None
    ) -> ProviderDelta | None:
        provider_tools, _ = split_tools_for_dispatch(self.tools)
        final: ProviderDelta | None = None
        started = time.perf_counter()
        step_start = len(self.text)

        def take(delta: ProviderDelta) -> TextDelta | None:
            nonlocal final
            if delta.done:
                final = delta
            if not delta.text:
                return None
            self.text.append(delta.text)
            return TextDelta(text=delta.text)

        deltas = self.provider(
            model=model, messages=messages, tools=provider_tools, cancel=self.cancel, retry=retry
        )
        if self.read_stream is not None:
            await self.read_stream(deltas, take)
        else:
            async for delta in deltas:
                event = take(delta)
                if event is not None:
                    self.sink(event)
        if final is not None:
            self.account(model, messages, provider_tools, final, step_start, started)
        return final

    def account(
        self,
        model: str,
        messages: list[Message],
        provider_tools: Sequence[AgentTool],
        final: ProviderDelta,
        step_start: int,
        started: float,
    ) -> None:
        """Add one call's tokens and price to the turn and report them as an event."""
        reply_text = "".join(self.text[step_start:])
        usage, estimated = self.meter.measure(final, messages, provider_tools, reply_text)
        cost = call_cost(model, usage)
        self.usage.update(usage)
        self.cost += cost.usd
        self.price_known = self.price_known and cost.known
        self.steps_priced += 1
        self.sink(
            ModelCallFinished(
                model=model,
                step=self.steps_priced,
                prompt_tokens=usage.get("prompt_tokens", 0),
                completion_tokens=usage.get("completion_tokens", 0),
                cached_tokens=usage.get("cached_tokens", 0),
                cost_usd=cost.usd,
                price_known=cost.known,
                estimated=estimated,
                finish_reason=final.finish_reason,
                duration_ms=(time.perf_counter() - started) * 1000,
            )
        )

    async def run_calls(self, calls: list[ToolCall]) -> list[ToolCallOutcome] | None:
        """Run one step's calls concurrently; None when the turn was cancelled meanwhile."""
        call_cancels = [asyncio.Event() for _ in calls]
        tasks = [
            asyncio.ensure_future(
                run_tool_call(call, offered=self.offered, sink=self.sink, cancel=call_cancel)
            )
            for call, call_cancel in zip(calls, call_cancels, strict=True)
        ]
        stop = asyncio.ensure_future(self.cancel.wait())
        try:
            pending = set(tasks)
            while pending and not self.cancel.is_set():
                _, pending = await asyncio.wait(
                    pending | {stop}, return_when=asyncio.FIRST_COMPLETED
                )
                pending.discard(stop)
        finally:
            stop.cancel()
        if not self.cancel.is_set():
            return [task.result() for task in tasks]
        # Stop: tell each tool first (it may clean up), then stop waiting for it. Told,
        # a call returns within the call policy's grace with what it printed so far (its
        # stream's tail, in its ToolFinished): only one that does not is cut off here.
        for call_cancel in call_cancels:
            call_cancel.set()
        await asyncio.wait(tasks, timeout=_STOPPED_CALL_WAIT_S)
        for call, task in zip(calls, tasks, strict=True):
            if not task.done():
                task.cancel()
                self.sink(
                    ToolFinished(
                        call_id=call.id, name=call.name, preview="cancelled", is_error=True
                    )
                )
        await asyncio.gather(*tasks, return_exceptions=True)
        return None

    def over_validation_budget(self, outcomes: list[ToolCallOutcome], budget: int) -> str | None:
        for outcome in outcomes:
            if outcome.invalid_arguments:
                self.invalid_streak[outcome.call.name] += 1
            elif outcome.call.name in self.offered:
                self.invalid_streak.pop(outcome.call.name, None)
        for outcome in outcomes:
            if self.invalid_streak[outcome.call.name] >= budget:
                return (
                    f"tool {outcome.call.name!r} got invalid arguments {budget} times in a row; "
                    f"giving up. Last error: {outcome.result.content}"
                )
        return None


async def agent_loop(
    *,
    model: str,
    messages: list[Message],
    tools: Sequence[AgentTool],
    sink: EventSink,
    cancel: asyncio.Event,
    max_steps: int = DEFAULT_MAX_STEPS,
    validation_budget: int = DEFAULT_VALIDATION_BUDGET,
    retry: RetryPolicy | None = None,
    provider: StreamChat | None = None,
    budget_check: BudgetCheck | None = None,
    read_stream: StreamReader | None = None,
) -> LoopOutcome:
    """Run the loop, appending to ``messages`` and sending events to ``sink``.

    Terminal problems are reported as a :class:`TurnError` event and a
    ``stop_reason``; the loop itself never raises for a model or tool failure.
    ``read_stream``, when given, reads each model call's deltas instead of the loop
    (the loop waits for it): a host whose events are consumed in another task reads
    the stream there, so a streamed piece wakes one task rather than two. It must
    send the taker's events in order, after everything sent before, and before
    anything sent after it returns.
    """
    if max_steps < 1:
        raise ValueError(f"max_steps must be at least 1, got {max_steps!r}")
    turn = _Turn(
        tools=tools,
        sink=sink,
        cancel=cancel,
        provider=provider or stream_chat,
        read_stream=read_stream,
    )
    steps = 0
    while True:
        if cancel.is_set():
            return turn.outcome("stopped", steps)
        if steps >= max_steps:
            sink(
                TurnError(
                    kind="step_limit",
                    message=f"stopped after {max_steps} model steps (the step limit) while the "
                    "model was still calling tools; send a new message to continue",
                )
            )
            return turn.outcome("step_limit", steps)
        if budget_check is not None:
            refusal = await budget_check(turn.cost)
            if refusal:
                sink(TurnError(kind="budget", message=refusal))
                return turn.outcome("budget", steps)
        steps += 1
        step_start = len(turn.text)
        try:
            reply = await turn.ask_model(model=model, messages=messages, retry=retry)
        except ProviderError as error:
            tries = f" (after {error.attempts} attempts)" if error.attempts > 1 else ""
            sink(TurnError(kind=error.kind, message=f"{error.message}{tries}"))
            return turn.outcome("error", steps)
        if reply is None:
            return turn.outcome("stopped", steps)
        step_text = "".join(turn.text[step_start:])
        messages.append(Message(role="assistant", content=step_text, tool_calls=reply.tool_calls))
        if not reply.tool_calls:
            return turn.outcome("completed", steps)
        outcomes = await turn.run_calls(reply.tool_calls)
        if outcomes is None:
            return turn.outcome("stopped", steps)
        for outcome in outcomes:
            messages.append(
                Message(
                    role="tool",
                    content=_model_content(outcome.result),
                    tool_call_id=outcome.call.id,
                    name=outcome.call.name,
                )
            )
        exhausted = turn.over_validation_budget(outcomes, validation_budget)
        if exhausted is not None:
            sink(TurnError(kind="tool_arguments", message=exhausted))
            return turn.outcome("error", steps)
