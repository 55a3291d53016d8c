"""Steering a running turn: the owner's answers (approve, deny, answer, elicit) and Stop.

The dispatcher calls a turn's hooks when a tool needs approval, asks a question or shows
a form; each hook parks a future keyed by the call id until a control message settles
it. Control travels through the channel layer group ``chat.<id>.control``: any socket
(any tab, any process) sends there with :func:`turn_control_send`, and the process
running the turn listens there (:meth:`TurnControl._listen`), so with Redis and several
daphne processes a Stop pressed in a tab served by another process still reaches the turn.
Decisions bind to one call id and to the conversation's owner.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Literal

from chat_app import turn_store
from chat_app.approvals import ALLOWED_REASON, tool_always_asks
from chat_app.relay import group_send_safely
from openprogram.agent.approvals import QuestionUnanswered
from openprogram.agent.elicitation import ElicitationAnswer
from openprogram.agent.types import ApprovalDecision, ApprovalRequest

__all__ = ["ControlAction", "TurnControl", "control_group", "turn_control_send"]

_log = logging.getLogger(__name__)

ControlAction = Literal["approve", "deny", "answer", "elicit", "stop"]
_STOP_GRACE_SECONDS = 3.0
_LISTENER_CLOSE = "turn.listener.close"
_LISTENER_CLOSE_SECONDS = 65.0
"""How long a stopped turn's listener may take to read its close message: longer than the
channel layer keeps a message (60 s), since until then the message can still come."""
_closing_listeners: set[asyncio.Task[None]] = set()


def control_group(conversation_id: int) -> str:
    return f"chat.{conversation_id}.control"


class TurnControl:
    """The control half of :class:`chat_app.turns.ActiveTurn` (which sets the attributes
    below and calls :meth:`_controls_init`)."""

    conversation_id: int
    owner_id: int
    run_id: int
    request: Any
    task: asyncio.Task[Any] | None
    allowed_tools: set[str]

    def _controls_init(self) -> None:
        self._approvals: dict[str, asyncio.Future[ApprovalDecision]] = {}
        self._questions: dict[str, asyncio.Future[str]] = {}
        self._elicitations: dict[str, asyncio.Future[Any]] = {}
        self._remember: set[str] = set()
        self._always_allow: dict[str, str] = {}
        """call id → the "always allow" rule (``bash: git status``) sent with its approval."""

    # --- hooks the dispatcher calls (it announces, times out and fails closed) -----------
    async def approval_hook(self, request: ApprovalRequest) -> ApprovalDecision:
        # The one place a per-conversation grant is honoured; always-ask tools never are,
        # nor an ask the team policy does not let the user relax (docs/policy.md).
        always_asks = tool_always_asks(request.tool_name) or not request.user_may_allow
        if request.tool_name in self.allowed_tools and not always_asks:
            return ApprovalDecision(approved=True, reason=ALLOWED_REASON)
        future: asyncio.Future[ApprovalDecision] = asyncio.get_running_loop().create_future()
        self._approvals[request.call_id] = future
        try:
            decision = await future
        finally:
            self._approvals.pop(request.call_id, None)
        always_allow = self._always_allow.pop(request.call_id, "")
        if decision.approved and always_allow and request.user_may_allow:
            # A refused pattern is logged by the store; the call itself stays approved.
            await turn_store.save_always_allow(owner_id=self.owner_id, text=always_allow)
        if decision.approved and request.call_id in self._remember and not always_asks:
            stored = await turn_store.allow_tool(
                conversation_id=self.conversation_id,
                owner_id=self.owner_id,
                name=request.tool_name,
            )
            if stored:
                self.allowed_tools.add(request.tool_name)
                decision = ApprovalDecision(approved=True, reason=ALLOWED_REASON)
        return decision

    async def question_hook(self, question: Any) -> str:
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._questions[question.call_id] = future
        try:
            return await future
        finally:
            self._questions.pop(question.call_id, None)

    async def elicitation_hook(self, request: Any) -> Any:
        """A tool's form or link (an MCP server's question): wait for the owner's answer."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._elicitations[request.call_id] = future
        try:
            return await future
        finally:
            self._elicitations.pop(request.call_id, None)

    def _elicitation_answered(self, call_id: str, message: dict[str, Any]) -> None:
        future = self._elicitations.get(call_id)
        choice = message.get("choice")
        if future is None or future.done() or choice not in ("accept", "decline", "cancel"):
            return
        content = message.get("content") if choice == "accept" else None
        future.set_result(ElicitationAnswer(choice, content if isinstance(content, dict) else {}))

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
                if action == "approve" and message.get("remember"):
                    self._remember.add(call_id)
                always_allow = message.get("always_allow")
                if action == "approve" and isinstance(always_allow, str) and always_allow:
                    self._always_allow[call_id] = always_allow
                future.set_result(
                    ApprovalDecision(approved=action == "approve", reason=message.get("reason", ""))
                )
        elif action == "answer":
            answer = self._questions.get(call_id)
            if answer is not None and not answer.done():
                answer.set_result(message.get("text", ""))
        elif action == "elicit":
            self._elicitation_answered(call_id, message)

    def _stop(self) -> None:
        if self.request.cancel.is_set():
            return
        self.request.cancel.set()
        for future in self._approvals.values():
            if not future.done():
                future.set_result(ApprovalDecision(approved=False, reason="the turn was stopped"))
        for future in self._questions.values():
            if not future.done():
                future.set_exception(QuestionUnanswered("the turn was stopped"))
        for future in self._elicitations.values():
            if not future.done():
                future.set_result(ElicitationAnswer("cancel", reason="the turn was stopped"))
        # A tool that ignores its cancel event must not hold the turn: cancel the task.
        asyncio.get_running_loop().call_later(_STOP_GRACE_SECONDS, self._force_stop)

    def _force_stop(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()

    # --- the control listener ------------------------------------------------------
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

        Under load the close message can queue behind many others for seconds; the
        turn does not wait for it (its reply would wait too), and it is not cancelled
        after a few seconds as it was: a background task waits up to the layer's
        message expiry, after which the close message cannot come any more.
        """
        await _safe(layer.group_discard(control_group(self.conversation_id), channel))
        await _safe(layer.send(channel, {"type": _LISTENER_CLOSE}))
        closing = asyncio.create_task(_listener_wait(listener))
        _closing_listeners.add(closing)
        closing.add_done_callback(_closing_listeners.discard)


async def _listener_wait(listener: asyncio.Task[None]) -> None:
    try:
        await asyncio.wait_for(asyncio.shield(listener), _LISTENER_CLOSE_SECONDS)
    except BaseException:  # it never read its close message, or it had failed
        listener.cancel()


async def _safe(awaitable: Any) -> None:
    try:
        await awaitable
    except Exception:
        _log.exception("channel layer call failed")


async def turn_control_send(
    *,
    conversation_id: int,
    user_id: int,
    action: ControlAction,
    call_id: str = "",
    reason: str = "",
    text: str = "",
    remember: bool = False,
    always_allow: str = "",
    choice: str = "",
    content: dict[str, Any] | None = None,
) -> None:
    """Route a control message to whichever process runs the conversation's turn.

    ``choice`` and ``content``: an answer to a form (``elicit``): accept/decline/cancel.
    """
    await group_send_safely(
        control_group(conversation_id),
        {
            "type": "turn.control",
            "action": action,
            "user_id": user_id,
            "call_id": call_id,
            "reason": reason,
            "text": text,
            "remember": remember,
            "always_allow": always_allow,
            "choice": choice,
            "content": content,
        },
    )
