"""Running a chat turn: an asyncio task per conversation, its events persisted and relayed.

A turn never runs inside a consumer's ``receive()``: :func:`turn_start` creates a task
in a process-level registry keyed by conversation id, so closing the tab does not stop
it and any socket (any tab, any process) can steer it: approvals, answers and Stop
reach it through ``chat_app.turn_control``.

While it runs, the turn renews its run's lease (``chat_app.leases``). A server that
dies mid-turn stops renewing, and whoever next touches the conversation closes the
run as orphaned; a turn that finds its run closed that way stops itself.

Every event is numbered, written to run history and then sent to the group
``chat.<id>``, which every open tab of the conversation joins: see
``chat_app.turn_events``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from typing import Any

from channels.layers import get_channel_layer
from django.contrib.auth.models import AbstractBaseUser

from audit_app.recording import audit_run_begin
from chat_app import turn_store
from chat_app.approvals import tool_always_asks
from chat_app.explain import explain_compact
from chat_app.leases import lease_keep
from chat_app.markdown import render_markdown
from chat_app.model_titles import title_after_turn
from chat_app.schemas import TurnOptions
from chat_app.turn_control import ControlAction, TurnControl, control_group, turn_control_send
from chat_app.turn_events import TurnEvents
from chat_app.turn_registry import (
    active_turn,
    flight_begin,
    flight_end,
    single_process_layer,
    turn_hold,
    turn_in_flight,
    turn_release,
    turn_started_since,
    turns_started,
)
from core.api_errors import ConflictError
from openprogram.agent.dispatcher import process_user_turn
from openprogram.agent.events import TurnRequest

__all__ = [
    "ActiveTurn",
    "ControlAction",
    "TurnOutcome",
    "active_turn",
    "control_group",
    "events_group",
    "turn_control_send",
    "turn_in_flight",
    "turn_run_to_completion",
    "turn_start",
    "turn_started_since",
    "turns_started",
]

_log = logging.getLogger(__name__)


def events_group(conversation_id: int) -> str:
    return f"chat.{conversation_id}"


@dataclasses.dataclass
class TurnOutcome:
    run_id: int
    status: str
    text: str
    error: str


class ActiveTurn(TurnEvents, TurnControl):
    """One running turn: its request, its pending approvals/questions, its event stream."""

    def __init__(self, *, conversation_id: int, owner_id: int, run_id: int, request: Any) -> None:
        self.conversation_id = conversation_id
        self.owner_id = owner_id
        self.run_id = run_id
        self.request = request
        self.seq = 0
        self.task: asyncio.Task[TurnOutcome] | None = None
        self._events_init(group=events_group(conversation_id))
        self._controls_init()
        self._text_parts: list[str] = []
        self.allowed_tools: set[str] = set()
        """Tools the owner allowed for the rest of the conversation (chat_app.approvals)."""
        self._call_started: dict[str, float] = {}
        self._run_cost = 0.0
        """Cost of every model call this run made, nested runs' included (from events)."""
        self.budget_at_start: str | None = None
        self._budget_at_start_unread = False
        """The start's budget verdict (turn_store.start) answers the first check, unspent."""

    # --- the task --------------------------------------------------------------------------
    async def run(self, *, first_event: dict[str, Any]) -> TurnOutcome:
        """The turn, from relaying ``first_event`` (its ``user_message``, already in run
        history: the store's start wrote it as ``seq`` 1) to its stored reply."""
        layer = get_channel_layer()
        channel = await layer.new_channel()
        await layer.group_add(control_group(self.conversation_id), channel)
        listener = asyncio.create_task(self._listen(layer, channel))
        heartbeat = asyncio.create_task(lease_keep(run_id=self.run_id, on_lost=self._stop))
        status, usage, error, final_text = "error", {}, "", None
        finished_seen = False
        try:
            await self.relay_recorded(first_event)
            async for event in process_user_turn(self.request):
                data = event.to_dict()
                if data["type"] == "tools_resolved":
                    # One row per registered tool is too much to relay and store per turn.
                    data["explain"] = explain_compact(
                        data.get("explain", []), tools=data["tools"], deferred=data["deferred"]
                    )
                elif data["type"] == "text_delta":
                    self._text_parts.append(data["text"])
                elif data["type"] in ("tool_call_started", "approval_requested", "tool_finished"):
                    self._annotate_call(data)
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

    def _annotate_call(self, data: dict[str, Any]) -> None:
        """What the page needs beyond the framework's event: may a grant cover the tool,
        and was a call cut off by Stop (shown as stopped, with the time it had run)."""
        call_id = data.get("call_id", "")
        if data["type"] == "tool_call_started":
            self._call_started[call_id] = time.monotonic()
        elif data["type"] == "approval_requested":
            data["may_remember"] = data.get("user_may_allow", True) and not tool_always_asks(
                data.get("name", "")
            )
        elif data.get("is_error") and self.request.cancel.is_set():
            data["stopped"] = True
            started = self._call_started.get(call_id)
            if not data.get("duration_ms") and started is not None:
                data["duration_ms"] = (time.monotonic() - started) * 1000

    async def _finish(
        self, *, status: str, text: str, usage: dict[str, Any], error: str
    ) -> TurnOutcome:
        try:
            try:
                await self.flush()
            except Exception as exc:
                return await self._finish_unrecorded(text=text, usage=usage, failure=exc)
            message = await turn_store.finish(
                run_id=self.run_id,
                status=status,
                text=text,
                usage=usage,
                error=error,
            )
            # Closed as orphaned while it stalled: that verdict stands, and tabs are told.
            status, error = message.run.status, message.run.error
            # The run is closed: a message the page sends on seeing the reply may start now.
            self._release()
            reply = {
                "type": "assistant_message",
                "message_id": message.pk,
                "status": status,
                "text": text,
                "html": render_markdown(text),
            }
            await self._safe_emit(reply)
            await self._pump_idle()  # the stored reply is in history when the turn returns
            if self.history_failed:  # the run is closed and stored; the tabs must hear so
                await self.relay_unrecorded(reply)
        finally:
            self._release()
        return TurnOutcome(run_id=self.run_id, status=status, text=text, error=error)

    async def _finish_unrecorded(
        self, *, text: str, usage: dict[str, Any], failure: Exception
    ) -> TurnOutcome:
        """History refused the turn's events: close the run as failed if the database
        lets us, and tell the tabs directly, so none of them waits for the turn's end."""
        error = f"run history could not be written: {type(failure).__name__}: {failure}"
        message_id = None
        try:
            message = await turn_store.finish(
                run_id=self.run_id, status="error", text=text, usage=usage, error=error
            )
            message_id = message.pk
        except Exception:
            _log.exception("could not close run %r after its history failed", self.run_id)
        self._release()
        await self.relay_unrecorded(
            {"type": "error", "message": error, "kind": "internal"},
            {"type": "turn_finished", "stop_reason": "error", "usage": usage, "text": text},
            {
                "type": "assistant_message",
                "message_id": message_id,
                "status": "error",
                "text": text,
                "html": render_markdown(text),
            },
        )
        return TurnOutcome(run_id=self.run_id, status="error", text=text, error=error)

    def _release(self) -> None:
        """Leave the registry (only this turn's own slot: a next turn may hold it already)."""
        turn_release(self.conversation_id, self)

    async def budget_check(self, turn_cost: float) -> str | None:
        """The dispatcher asks before every model call: is the owner's budget spent?

        A nested run asks with its own cost only, and the outer loop's count leaves out
        its nested runs: the run's cost is the larger of what the caller counted and
        what this run's events reported.
        """
        cost = max(turn_cost, self._run_cost)
        if self._budget_at_start_unread and cost == 0:
            # Read in the start's transaction moments ago: the first model request need
            # not wait for another database job (time to first token under load).
            self._budget_at_start_unread = False
            return self.budget_at_start
        self._budget_at_start_unread = False
        return await turn_store.budget_refusal(
            user_id=self.owner_id, run_id=self.run_id, turn_cost=cost
        )

    async def _safe_emit(self, event: dict[str, Any]) -> None:
        try:
            await self.emit(event)
        except Exception:
            _log.exception("could not record %r for run %r", event.get("type"), self.run_id)


async def turn_start(
    *,
    user: AbstractBaseUser,
    conversation_id: int,
    text: str,
    options: TurnOptions,
    attended: bool | None = None,
    replaces: int | None = None,
) -> ActiveTurn:
    """Start a turn as a task; raises NotFoundError / ConflictError / UnprocessableError."""
    # Hold the slot while the run is prepared, so a second message cannot slip in.
    turn = ActiveTurn(conversation_id=conversation_id, owner_id=user.pk, run_id=0, request=None)
    if not turn_hold(conversation_id, turn):
        raise ConflictError("a turn is already running in this conversation; stop it first")
    flight_begin(conversation_id)
    try:
        prepared = await turn_store.start(
            user=user,
            conversation_id=conversation_id,
            text=text,
            options=options,
            attended=attended,
            may_abandon_orphans=single_process_layer(),
            replaces=replaces,
        )
    except BaseException:
        turn_release(conversation_id, turn)
        flight_end(conversation_id)
        raise
    turn.run_id = prepared.run_id
    audit_run_begin(run_id=prepared.run_id)  # the trail's channel for this run (API token...)
    turn.allowed_tools = set(prepared.allowed_tools)
    # SLF001: the turn's own flag, set where the turn is built.
    turn.budget_at_start, turn._budget_at_start_unread = prepared.budget_refusal, True  # noqa: SLF001
    turn.request = TurnRequest(
        **prepared.request_kwargs,
        approval_hook=turn.approval_hook,
        question_hook=turn.question_hook,
        elicitation_hook=turn.elicitation_hook,
        budget_check=turn.budget_check,
    )
    turn.task = asyncio.create_task(turn.run(first_event=prepared.first_event))
    turn.task.add_done_callback(lambda _task: flight_end(conversation_id))
    # The model's own title for a new conversation: a task of its own once this one ends.
    title_after_turn(
        turn.task,
        conversation_id=conversation_id,
        run_id=turn.run_id,
        owner_id=user.pk,
        attended=turn.request.attended,
        first=not turn.request.history,
        model=turn.request.model,
        title=prepared.title,
        text=turn.request.text,
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
