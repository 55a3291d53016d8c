"""Running a chat turn: an asyncio task per conversation, its events persisted and relayed.

A turn never runs inside a consumer's ``receive()``: :func:`turn_start` creates a task
in a process-level registry keyed by conversation id, so closing the tab does not stop
it and any socket (any tab, any process) can steer it. Control (approve, deny, answer,
stop) travels through the channel layer group ``chat.<id>.control``; the process whose
registry holds the task listens there, so with Redis and several daphne processes a
Stop pressed in a tab served by another process still reaches the turn.

While it runs, the turn renews its run's lease (``chat_app.leases``). A server that
dies mid-turn stops renewing, and whoever next touches the conversation closes the
run as orphaned; a turn that finds its run closed that way stops itself.

Every event is numbered (``seq``), persisted as a ``RunEvent`` and then sent to the
group ``chat.<id>``, which every open tab of the conversation joins. Text deltas and
tool output are sent at once but persisted in coalesced batches, so a streaming model
does not write one row per token.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import Any, Literal

from channels.db import database_sync_to_async
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.contrib.auth.models import AbstractBaseUser

from chat_app.explain import explain_compact
from chat_app.leases import lease_keep
from chat_app.markdown import render_markdown
from chat_app.relay import STREAMED, GroupRelay, coalesce_streamed, group_send_safely
from chat_app.schemas import TurnOptions
from chat_app.turn_inputs import turn_prepare
from openprogram.agent.types import ApprovalDecision, ApprovalRequest

__all__ = [
    "ActiveTurn",
    "ControlAction",
    "TurnOutcome",
    "active_turn",
    "control_group",
    "events_group",
    "turn_control_send",
    "turn_run_to_completion",
    "turn_start",
]

_log = logging.getLogger(__name__)

ControlAction = Literal["approve", "deny", "answer", "stop"]
_FLUSH_AFTER_SECONDS = 0.25
_FLUSH_AFTER_CHARS = 8_000
_STOP_GRACE_SECONDS = 3.0
_LISTENER_CLOSE = "turn.listener.close"
_LISTENER_CLOSE_SECONDS = 5.0

_active: dict[int, ActiveTurn] = {}


def events_group(conversation_id: int) -> str:
    return f"chat.{conversation_id}"


def control_group(conversation_id: int) -> str:
    return f"chat.{conversation_id}.control"


def active_turn(conversation_id: int) -> ActiveTurn | None:
    """The turn this process is running for ``conversation_id``, if any."""
    return _active.get(conversation_id)


def single_process_layer() -> bool:
    """True when no other process can be running turns (the in-memory channel layer)."""
    return isinstance(get_channel_layer(), InMemoryChannelLayer)


@dataclasses.dataclass
class TurnOutcome:
    run_id: int
    status: str
    text: str
    error: str


class ActiveTurn:
    """One running turn: its request, its pending approvals/questions, its event stream."""

    def __init__(self, *, conversation_id: int, owner_id: int, run_id: int, request: Any) -> None:
        self.conversation_id = conversation_id
        self.owner_id = owner_id
        self.run_id = run_id
        self.request = request
        self.seq = 0
        self.task: asyncio.Task[TurnOutcome] | None = None
        self._buffer: list[dict[str, Any]] = []
        self._buffer_chars = 0
        self._persist_lock = asyncio.Lock()
        self._flush_timer: asyncio.TimerHandle | None = None
        self._timed_flushes: set[asyncio.Future[None]] = set()
        self._relay = GroupRelay(events_group(conversation_id))
        self._approvals: dict[str, asyncio.Future[ApprovalDecision]] = {}
        self._questions: dict[str, asyncio.Future[str]] = {}
        self._text_parts: list[str] = []
        self._run_cost = 0.0
        """Cost of every model call this run made, nested runs' included (from events)."""

    # --- hooks the dispatcher calls (it announces, times out and fails closed) -----------
    async def approval_hook(self, request: ApprovalRequest) -> ApprovalDecision:
        future: asyncio.Future[ApprovalDecision] = asyncio.get_running_loop().create_future()
        self._approvals[request.call_id] = future
        try:
            return await future
        finally:
            self._approvals.pop(request.call_id, None)

    async def question_hook(self, question: Any) -> str:
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._questions[question.call_id] = future
        try:
            return await future
        finally:
            self._questions.pop(question.call_id, None)

    # --- control -------------------------------------------------------------------------
    def control(self, message: dict[str, Any]) -> None:
        """Act on a ``turn.control`` message; decisions bind to one call and the owner."""
        if message.get("user_id") != self.owner_id:
            _log.warning(
                "ignoring control from user %r for run %r", message.get("user_id"), self.run_id
            )
            return
        action, call_id = message.get("action"), message.get("call_id") or ""
        if action == "stop":
            self._stop()
        elif action in ("approve", "deny"):
            future = self._approvals.get(call_id)
            if future is not None and not future.done():
                future.set_result(
                    ApprovalDecision(approved=action == "approve", reason=message.get("reason", ""))
                )
        elif action == "answer":
            answer = self._questions.get(call_id)
            if answer is not None and not answer.done():
                answer.set_result(message.get("text", ""))

    def _stop(self) -> None:
        if self.request.cancel.is_set():
            return
        self.request.cancel.set()
        for future in self._approvals.values():
            if not future.done():
                future.set_result(ApprovalDecision(approved=False, reason="the turn was stopped"))
        from openprogram.agent.approvals import QuestionUnanswered

        for future in self._questions.values():
            if not future.done():
                future.set_exception(QuestionUnanswered("the turn was stopped"))
        # A tool that ignores its cancel event must not hold the turn: cancel the task.
        asyncio.get_running_loop().call_later(_STOP_GRACE_SECONDS, self._force_stop)

    def _force_stop(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()

    # --- events --------------------------------------------------------------------------
    async def emit(self, event: dict[str, Any]) -> dict[str, Any]:
        """Number, persist (coalescing streamed text) and relay one event to every tab."""
        self.seq += 1
        event = {**event, "seq": self.seq, "run_id": self.run_id}
        if event["type"] in STREAMED:
            if not self._buffer:
                # Written within the window even if no further event ever comes (a model
                # that streams and then stalls, a server that dies): crash loss ≤ 0.25 s.
                self._flush_timer = asyncio.get_running_loop().call_later(
                    _FLUSH_AFTER_SECONDS, self._flush_on_timer
                )
            self._buffer.append(event)
            self._buffer_chars += len(event.get("text", ""))
            if self._buffer_chars >= _FLUSH_AFTER_CHARS:
                await self.flush()
        else:
            await self.flush(extra=event)
        await self._relay.send(event)
        return event

    def _flush_on_timer(self) -> None:
        self._flush_timer = None
        task = asyncio.ensure_future(self._safe_flush())
        self._timed_flushes.add(task)
        task.add_done_callback(self._timed_flushes.discard)

    async def _safe_flush(self) -> None:
        try:
            await self.flush()
        except Exception:
            _log.exception("could not write streamed events of run %r", self.run_id)

    async def flush(self, extra: dict[str, Any] | None = None) -> None:
        """Write buffered streamed events (and ``extra``) to run history, in order."""
        if self._flush_timer is not None:
            self._flush_timer.cancel()
            self._flush_timer = None
        async with self._persist_lock:
            batch = coalesce_streamed(self._buffer)
            self._buffer, self._buffer_chars = [], 0
            if extra is not None:
                batch.append(extra)
            if batch:
                from chat_app.services import run_record_events

                await database_sync_to_async(run_record_events)(run_id=self.run_id, events=batch)

    # --- the task --------------------------------------------------------------------------
    async def run(self, *, user_text: str, message_id: int, title: str) -> TurnOutcome:
        layer = get_channel_layer()
        channel = await layer.new_channel()
        await layer.group_add(control_group(self.conversation_id), channel)
        listener = asyncio.create_task(self._listen(layer, channel))
        heartbeat = asyncio.create_task(lease_keep(run_id=self.run_id, on_lost=self._stop))
        status, usage, error, final_text = "error", {}, "", None
        finished_seen = False
        try:
            await self.emit(
                {
                    "type": "user_message",
                    "text": user_text,
                    "message_id": message_id,
                    "title": title,
                }
            )
            from openprogram.agent.dispatcher import process_user_turn

            async for event in process_user_turn(self.request):
                data = event.to_dict()
                if data["type"] == "tools_resolved":
                    # One row per registered tool is too much to relay and store per turn.
                    data["explain"] = explain_compact(
                        data.get("explain", []), tools=data["tools"], deferred=data["deferred"]
                    )
                elif data["type"] == "text_delta":
                    self._text_parts.append(data["text"])
                elif data["type"] == "model_call":
                    await self._record_model_call(data)
                elif data["type"] == "turn_finished":
                    finished_seen = True
                    status = data.get("stop_reason", "completed")
                    usage = {
                        **data.get("usage", {}),
                        "cost_usd": data.get("cost_usd", 0.0),
                        "price_known": data.get("price_known", True),
                    }
                    final_text = data.get("text") or None
                elif data["type"] == "error":
                    error = data.get("message", "")
                await self.emit(data)
        except asyncio.CancelledError:
            status, error = "stopped", error or ""
        except Exception as exc:
            _log.exception("turn for run %r failed", self.run_id)
            status, error = "error", f"the turn failed: {type(exc).__name__}: {exc}"
            await self._safe_emit({"type": "error", "message": error, "kind": "internal"})
        finally:
            heartbeat.cancel()
            await self._stop_listening(layer, channel, listener)
        if self.request.cancel.is_set() and status in ("completed", "error") and not error:
            status = "stopped"
        if status == "budget":  # the run was stopped by the budget; its error says so
            status = "stopped"
        text = final_text if final_text is not None else "".join(self._text_parts)
        if not finished_seen:
            await self._safe_emit(
                {
                    "type": "turn_finished",
                    "stop_reason": status,
                    "usage": usage,
                    "text": text,
                    "steps": 0,
                }
            )
        return await self._finish(status=status, text=text, usage=usage, error=error)

    async def _finish(
        self, *, status: str, text: str, usage: dict[str, Any], error: str
    ) -> TurnOutcome:
        from chat_app.services import run_finish

        try:
            await self.flush()
            message = await database_sync_to_async(run_finish)(
                run_id=self.run_id, status=status, text=text, usage=usage, error=error
            )
            # Closed as orphaned while it stalled: that verdict stands, and tabs are told.
            status, error = message.run.status, message.run.error
            await self._safe_emit(
                {
                    "type": "assistant_message",
                    "message_id": message.pk,
                    "status": status,
                    "text": text,
                    "html": render_markdown(text),
                }
            )
        finally:
            _active.pop(self.conversation_id, None)
        return TurnOutcome(run_id=self.run_id, status=status, text=text, error=error)

    async def _record_model_call(self, event: dict[str, Any]) -> None:
        from usage_app.services import model_call_record

        self._run_cost += float(event.get("cost_usd") or 0.0)
        try:
            await database_sync_to_async(model_call_record)(
                user_id=self.owner_id, run_id=self.run_id, event=event
            )
        except Exception:  # the ledger must not take the turn down; the run keeps the totals
            _log.exception("could not record a model call of run %r", self.run_id)

    async def budget_check(self, turn_cost: float) -> str | None:
        """The dispatcher asks before every model call: is the owner's budget spent?

        A nested run asks with its own cost only, and the outer loop's count leaves out
        its nested runs: the run's cost is the larger of what the caller counted and
        what this run's events reported.
        """
        from usage_app.services import budget_refusal

        return await database_sync_to_async(budget_refusal)(
            user_id=self.owner_id, run_id=self.run_id, turn_cost=max(turn_cost, self._run_cost)
        )

    async def _safe_emit(self, event: dict[str, Any]) -> None:
        try:
            await self.emit(event)
        except Exception:
            _log.exception("could not record %r for run %r", event.get("type"), self.run_id)

    async def _listen(self, layer: Any, channel: str) -> None:
        while True:
            message = await layer.receive(channel)
            if message.get("type") == _LISTENER_CLOSE:
                return
            if message.get("type") == "turn.control":
                self.control(message)

    async def _stop_listening(self, layer: Any, channel: str, listener: asyncio.Task) -> None:
        """End the control listener by message, not by cancelling it.

        channels-redis shares one Redis key among all of a process's channels and the
        receive in flight may have just popped a message meant for another consumer
        (a tab's socket); cancelling it there loses that message. Observed as tabs
        missing ``turn_finished`` with two processes on Redis under load.
        """
        await _safe(layer.group_discard(control_group(self.conversation_id), channel))
        await _safe(layer.send(channel, {"type": _LISTENER_CLOSE}))
        try:
            await asyncio.wait_for(asyncio.shield(listener), _LISTENER_CLOSE_SECONDS)
        except asyncio.CancelledError:
            listener.cancel()
            raise
        except Exception:  # it did not stop in time, or it had failed
            listener.cancel()


async def _safe(awaitable: Any) -> None:
    try:
        await awaitable
    except Exception:
        _log.exception("channel layer call failed")


async def turn_start(
    *,
    user: AbstractBaseUser,
    conversation_id: int,
    text: str,
    options: TurnOptions,
    attended: bool | None = None,
) -> ActiveTurn:
    """Start a turn as a task; raises NotFoundError / ConflictError / UnprocessableError."""
    from openprogram.agent.events import TurnRequest
    from openprogram_site.api_errors import ConflictError

    if conversation_id in _active:
        raise ConflictError("a turn is already running in this conversation; stop it first")
    # Hold the slot while the run is prepared, so a second message cannot slip in.
    turn = ActiveTurn(conversation_id=conversation_id, owner_id=user.pk, run_id=0, request=None)
    _active[conversation_id] = turn
    try:
        prepared = await database_sync_to_async(turn_prepare)(
            user=user,
            conversation_id=conversation_id,
            text=text,
            options=options,
            attended=attended,
            may_abandon_orphans=single_process_layer(),
        )
    except BaseException:
        _active.pop(conversation_id, None)
        raise
    turn.run_id = prepared.run_id
    turn.request = TurnRequest(
        **prepared.request_kwargs,
        approval_hook=turn.approval_hook,
        question_hook=turn.question_hook,
        budget_check=turn.budget_check,
    )
    turn.task = asyncio.create_task(
        turn.run(user_text=text, message_id=prepared.message_id, title=prepared.title)
    )
    return turn


async def turn_run_to_completion(
    *, user: AbstractBaseUser, conversation_id: int, text: str, options: TurnOptions
) -> TurnOutcome:
    """An unattended turn for scripts: returns when it has finished."""
    turn = await turn_start(
        user=user, conversation_id=conversation_id, text=text, options=options, attended=False
    )
    assert turn.task is not None
    return await asyncio.shield(turn.task)


async def turn_control_send(
    *,
    conversation_id: int,
    user_id: int,
    action: ControlAction,
    call_id: str = "",
    reason: str = "",
    text: str = "",
) -> None:
    """Route a control message to whichever process runs the conversation's turn."""
    await group_send_safely(
        control_group(conversation_id),
        {
            "type": "turn.control",
            "action": action,
            "user_id": user_id,
            "call_id": call_id,
            "reason": reason,
            "text": text,
        },
    )
