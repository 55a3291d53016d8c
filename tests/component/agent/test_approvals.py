"""Approval and question hooks as a turn installs them: announced, bounded, fail closed."""

from __future__ import annotations

import pytest

from openprogram.agent.approvals import (
    QuestionUnanswered,
    approval_hook_for_turn,
    question_hook_for_turn,
)
from openprogram.agent.context import QuestionRequest
from openprogram.agent.events import ApprovalRequested, ApprovalResolved, QuestionAsked
from openprogram.agent.types import ApprovalDecision, ApprovalRequest

_REQUEST = ApprovalRequest(call_id="c1", tool_name="bash", arguments={"command": "ls"})


def _recorder():
    events = []

    async def emit(event):
        events.append(event)

    return events, emit


async def test_a_failing_approval_hook_denies_and_names_the_failure():
    events, emit = _recorder()

    async def broken(request):
        raise OSError("terminal gone")

    ask = approval_hook_for_turn(host_hook=broken, attended=True, emit=emit, timeout=30)
    decision = await ask(_REQUEST)

    assert decision.approved is False
    assert "OSError: terminal gone" in decision.reason
    assert [type(e) for e in events] == [ApprovalRequested, ApprovalResolved]


async def test_a_hook_returning_something_else_than_a_decision_denies():
    _events, emit = _recorder()

    async def sloppy(request):
        return True

    ask = approval_hook_for_turn(host_hook=sloppy, attended=True, emit=emit, timeout=30)

    assert (await ask(_REQUEST)) == ApprovalDecision(
        approved=False, reason="the approval hook returned 'bool'"
    )


async def test_an_approval_without_a_host_hook_is_denied_with_a_reason():
    events, emit = _recorder()
    ask = approval_hook_for_turn(host_hook=None, attended=True, emit=emit, timeout=30)

    decision = await ask(_REQUEST)

    assert decision.approved is False
    assert "has no approver" in decision.reason
    assert events[-1] == ApprovalResolved(call_id="c1", approved=False, reason=decision.reason)


async def test_a_question_is_announced_then_answered():
    events, emit = _recorder()

    async def answer(question):
        return "yes"

    ask = question_hook_for_turn(host_hook=answer, attended=True, emit=emit, timeout=30)

    assert await ask(QuestionRequest(call_id="q", question="Go?", choices=["yes", "no"])) == "yes"
    assert events == [QuestionAsked(call_id="q", question="Go?", choices=["yes", "no"])]


async def test_an_empty_answer_counts_as_unanswered():
    _events, emit = _recorder()

    async def blank(question):
        return "  "

    ask = question_hook_for_turn(host_hook=blank, attended=True, emit=emit, timeout=30)

    with pytest.raises(QuestionUnanswered, match="empty answer"):
        await ask(QuestionRequest(call_id="q", question="?"))
