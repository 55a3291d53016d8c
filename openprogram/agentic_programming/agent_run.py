"""One model execution started by an Agent (``self(prompt)`` / ``await self.arun(prompt)``).

The run goes through the same dispatcher and agent loop as a chat turn. It is
nested in the current turn when there is one: it inherits the user,
conversation, workspace, channel, attended flag and approval/question hooks,
it is offered at most the tools the turn was offered (so it has no authority the
outer turn lacks), it is cancelled with the calling
scope, and its tool events are forwarded to the outer turn with
``parent_call_id`` set to the model call that led here, so the chat can show
nested cards. The run happens in a task of its own, so the dispatcher's
ContextVars never touch the caller's.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

from openprogram.agent.context import TurnContext, get_turn
from openprogram.agent.events import (
    Event,
    ModelCallFinished,
    TextDelta,
    ToolCallStarted,
    ToolFinished,
    ToolUpdate,
    TurnError,
    TurnFinished,
    TurnRequest,
)
from openprogram.agentic_programming.call_state import CallCancelled
from openprogram.agentic_programming.context import Context, current_context
from openprogram.programs.deferred import searchable_pool

__all__ = ["AgentRunError", "run_model"]

_STOP_GRACE_S = 0.4
"""How long a cancelled nested run gets to stop on its own (the tool runtime waits 0.5 s)."""
_FORWARDED = (ToolCallStarted, ToolUpdate, ToolFinished, ModelCallFinished)
"""Approval and question events are not forwarded: the outer turn's hooks, which
the nested run calls, already announce them on the outer turn."""


class AgentRunError(RuntimeError):
    """The model run ended with an error (provider failure, unknown toolset...)."""

    def __init__(self, message: str, *, kind: str = "error") -> None:
        super().__init__(message)
        self.kind = kind


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _on_loop(
    fn: Callable[..., Awaitable[Any]] | None, home: asyncio.AbstractEventLoop | None
) -> Callable[..., Awaitable[Any]] | None:
    """``fn`` made callable from another thread's loop: it runs on ``home``, its own loop."""
    if fn is None or home is None:
        return fn

    async def call(*args: Any) -> Any:
        if _running_loop() is home:
            return await fn(*args)
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(fn(*args), home))

    return call


def _parent_call_id(ctx: Context | None) -> str | None:
    while ctx is not None:
        if ctx.node.tool_call_id is not None:
            return ctx.node.tool_call_id
        ctx = ctx.parent
    return None


def _nested_request(
    prompt: str,
    *,
    outer: TurnContext | None,
    ctx: Context | None,
    model: str,
    cancel: asyncio.Event,
    home: asyncio.AbstractEventLoop | None,
    **overrides: Any,
) -> TurnRequest:
    deny = set(overrides.pop("deny", None) or ())
    if ctx is not None:
        deny |= ctx.tool_names
    pool = searchable_pool()
    if pool is not None:
        # Inside a turn, a nested run may use at most what the turn itself was
        # offered (after its profile, disables and channel): no extra authority.
        allow = overrides.get("allow")
        overrides["allow"] = sorted(set(pool) if allow is None else set(allow) & set(pool))
    request = TurnRequest(text=prompt, model=model, cancel=cancel, deny=sorted(deny) or None)
    if outer is not None:
        request = dataclasses.replace(
            request,
            user_id=outer.user_id,
            conversation_id=outer.conversation_id,
            workspace=outer.workspace,
            source=outer.source,
            attended=outer.attended,
            state=outer.state,
            # The user's profiles travel in, so toolset= may name one; the allow list
            # above still keeps the run within what the outer turn was offered.
            named_profiles=outer.named_profiles,
            # The same team policy: a nested run's calls are decided as the turn's are.
            policy=outer.policy,
            budget_check=_on_loop(outer.budget_check, home),
            approval_hook=_on_loop(outer.approval_hook, home),
            question_hook=_on_loop(outer.question_hook, home),
        )
    return dataclasses.replace(request, **{k: v for k, v in overrides.items() if v is not None})


async def _consume(
    request: TurnRequest,
    forward: Callable[[Event], Awaitable[Any]] | None,
    parent_call_id: str | None,
) -> str:
    from openprogram.agent.dispatcher import process_user_turn

    pieces: list[str] = []
    final = ""
    # aclosing: a cancelled run still closes the turn, which stops its task and tools.
    async with contextlib.aclosing(process_user_turn(request)) as events:
        async for event in events:
            if isinstance(event, TextDelta):
                pieces.append(event.text)
            elif isinstance(event, TurnError):
                raise AgentRunError(event.message, kind=event.kind)
            elif isinstance(event, TurnFinished):
                if event.stop_reason == "stopped":
                    raise CallCancelled("the model run was stopped")
                final = event.text
            elif forward is not None and isinstance(event, _FORWARDED):
                if (
                    isinstance(event, ToolCallStarted | ToolFinished)
                    and event.parent_call_id is None
                ):
                    event = dataclasses.replace(event, parent_call_id=parent_call_id)
                await forward(event)
    return final or "".join(pieces)


async def run_model(
    prompt: str,
    *,
    model: str,
    toolset: str | None = None,
    allow: list[str] | None = None,
    deny: list[str] | None = None,
    system_prompt: str | None = None,
    max_steps: int | None = None,
) -> str:
    """Run ``prompt`` through the dispatcher; return the model's final text.

    ``toolset`` narrows the tools (layer 2b; default: the full exposed set,
    ``"none"`` for none). Tools of the calling methods are never offered, so a
    method cannot call itself back. Raises :class:`AgentRunError` when the run
    fails and :class:`CallCancelled` when the calling scope is cancelled.
    """
    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError(f"an Agent run needs a non-empty prompt, got {prompt!r}")
    ctx = current_context.get()
    outer = get_turn()
    loop = asyncio.get_running_loop()
    home = ctx.loop if ctx is not None and ctx.loop is not None else loop
    cancel = asyncio.Event()
    unlink = ctx.token.link_event(cancel, loop) if ctx is not None else None
    request = _nested_request(
        prompt,
        outer=outer,
        ctx=ctx,
        model=model,
        cancel=cancel,
        home=home,
        toolset=toolset,
        allow=allow,
        deny=deny,
        system_prompt=system_prompt,
        max_steps=max_steps,
    )
    forward = _on_loop(outer.emit, home) if outer is not None else None
    task = asyncio.create_task(_consume(request, forward, _parent_call_id(ctx)))
    try:
        # shield: cancelling the caller must not cancel the run outright (see below).
        text = await asyncio.shield(task)
    except asyncio.CancelledError:
        cancel.set()
        # Let the nested turn stop its tools through their cancel events before
        # forcing it: a forced stop would only cancel their tasks.
        try:
            await asyncio.wait({task}, timeout=_STOP_GRACE_S)
        finally:
            if not task.done():
                task.cancel()
        raise
    finally:
        if unlink is not None:
            unlink()
    if ctx is not None:
        # The run may have completed just as the calling scope was cancelled.
        ctx.raise_if_cancelled()
    return text
