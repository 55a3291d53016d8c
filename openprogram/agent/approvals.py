"""Approval and question hooks as a turn sees them: announced as events, bounded in time.

A tool asks through ``get_turn().approval_hook`` / ``question_hook``. The
dispatcher installs the wrappers built here, so every request first goes out
as an event (the UI shows the prompt), then waits for the host's own hook at
most ``timeout`` seconds. Fail closed: unattended, no host hook, a timeout or a
failing hook all mean "denied" (approvals) or an error result (questions).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from openprogram.agent.context import QuestionRequest
from openprogram.agent.events import ApprovalRequested, ApprovalResolved, Event, QuestionAsked
from openprogram.agent.types import ApprovalDecision, ApprovalRequest

__all__ = ["QuestionUnanswered", "approval_hook_for_turn", "question_hook_for_turn"]

_log = logging.getLogger(__name__)

ApprovalHook = Callable[[ApprovalRequest], Awaitable[ApprovalDecision]]
QuestionHook = Callable[[QuestionRequest], Awaitable[str]]
Emit = Callable[[Event], Awaitable[None]]


class QuestionUnanswered(RuntimeError):
    """Nobody answered a tool's question; the tool turns this into an error result."""


def approval_hook_for_turn(
    *, host_hook: ApprovalHook | None, attended: bool, emit: Emit, timeout: float
) -> ApprovalHook:
    async def ask(request: ApprovalRequest) -> ApprovalDecision:
        await emit(
            ApprovalRequested(
                call_id=request.call_id,
                name=request.tool_name,
                arguments=request.arguments,
                reason=request.reason,
                rule=request.rule,
                user_may_allow=request.user_may_allow,
                suggestion=request.suggestion,
            )
        )
        if not attended:
            why = f" ({request.rule})" if request.rule else ""
            decision = ApprovalDecision(
                approved=False,
                reason=f"tool {request.tool_name!r} needs approval{why} and nobody is "
                "attending this turn",
            )
        elif host_hook is None:
            decision = ApprovalDecision(
                approved=False,
                reason=f"tool {request.tool_name!r} needs approval but this turn has no approver",
            )
        else:
            decision = await _decide(host_hook, request, timeout)
        await emit(
            ApprovalResolved(
                call_id=request.call_id, approved=decision.approved, reason=decision.reason
            )
        )
        return decision

    return ask


async def _decide(hook: ApprovalHook, request: ApprovalRequest, timeout: float) -> ApprovalDecision:
    try:
        decision = await asyncio.wait_for(hook(request), timeout)
    except TimeoutError:
        return ApprovalDecision(
            approved=False, reason=f"no approval for {request.tool_name!r} within {timeout:g} s"
        )
    except Exception as exc:
        _log.exception("approval hook failed for call %r", request.call_id)
        return ApprovalDecision(
            approved=False, reason=f"the approval hook failed ({type(exc).__name__}: {exc})"
        )
    if not isinstance(decision, ApprovalDecision):
        return ApprovalDecision(
            approved=False, reason=f"the approval hook returned {type(decision).__name__!r}"
        )
    return decision


def question_hook_for_turn(
    *, host_hook: QuestionHook | None, attended: bool, emit: Emit, timeout: float
) -> QuestionHook:
    async def ask(question: QuestionRequest) -> str:
        await emit(
            QuestionAsked(
                call_id=question.call_id, question=question.question, choices=question.choices
            )
        )
        if not attended or host_hook is None:
            raise QuestionUnanswered("nobody is attending this turn to answer the question")
        try:
            answer = await asyncio.wait_for(host_hook(question), timeout)
        except TimeoutError:
            raise QuestionUnanswered(
                f"the question was not answered within {timeout:g} s"
            ) from None
        if not isinstance(answer, str) or not answer.strip():
            raise QuestionUnanswered("the question got an empty answer")
        return answer

    return ask
