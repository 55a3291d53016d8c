"""requires_approval: evaluated per call, asked of the turn's approval hook, fail closed."""

from __future__ import annotations

import pytest

from openprogram.agent.context import TurnContext, current_turn
from openprogram.agent.types import AgentTool, ApprovalDecision, ApprovalRequest
from openprogram.programs._approval import tool_requires_approval
from openprogram.programs.decorator import build_function_tool


@pytest.fixture
def asked() -> list[ApprovalRequest]:
    return []


def _turn_with(decision: ApprovalDecision, asked: list[ApprovalRequest]):
    async def hook(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return decision

    return current_turn.set(TurnContext(approval_hook=hook))


def _deleter(calls: list[str], **settings):
    def delete(path: str) -> str:
        """Delete a file."""
        calls.append(path)
        return f"deleted {path}"

    return build_function_tool(delete, **settings)


async def test_an_approved_call_runs_and_the_hook_sees_the_arguments(asked):
    calls: list[str] = []
    token = _turn_with(ApprovalDecision(approved=True), asked)
    try:
        result = await _deleter(calls, requires_approval=True).execute("c7", {"path": "a.txt"})
    finally:
        current_turn.reset(token)
    assert result.content == "deleted a.txt" and calls == ["a.txt"]
    assert [(r.call_id, r.tool_name, r.arguments) for r in asked] == [
        ("c7", "delete", {"path": "a.txt"})
    ]


async def test_a_denied_call_never_runs_and_says_the_user_denied_it(asked):
    calls: list[str] = []
    token = _turn_with(ApprovalDecision(approved=False, reason="not that file"), asked)
    try:
        result = await _deleter(calls, requires_approval=True).execute("c1", {"path": "a.txt"})
    finally:
        current_turn.reset(token)
    assert result.is_error
    assert "The user denied the call to 'delete'" in result.content
    assert "not that file" in result.content
    assert calls == []


async def test_without_an_approver_the_call_is_denied():
    calls: list[str] = []
    result = await _deleter(calls, requires_approval=True).execute("c1", {"path": "a.txt"})
    assert result.is_error and "no approver is attached" in result.content
    assert calls == []


async def test_a_predicate_decides_per_call_on_the_validated_arguments(asked):
    calls: list[str] = []
    tool = _deleter(calls, requires_approval=lambda args: args["path"].startswith("/"))
    token = _turn_with(ApprovalDecision(approved=False), asked)
    try:
        relative = await tool.execute("c1", {"path": "notes.txt"})
        absolute = await tool.execute("c2", {"path": "/etc/passwd"})
    finally:
        current_turn.reset(token)
    assert not relative.is_error and absolute.is_error
    assert calls == ["notes.txt"]
    assert [r.arguments["path"] for r in asked] == ["/etc/passwd"]


async def test_a_failing_hook_denies_the_call():
    async def hook(request: ApprovalRequest) -> ApprovalDecision:
        raise ConnectionError("socket gone")

    calls: list[str] = []
    token = current_turn.set(TurnContext(approval_hook=hook))
    try:
        result = await _deleter(calls, requires_approval=True).execute("c1", {"path": "a"})
    finally:
        current_turn.reset(token)
    assert result.is_error and "ConnectionError" in result.content and calls == []


def test_a_raising_predicate_means_approval_is_required():
    def broken(args):
        raise KeyError("path")

    tool = AgentTool(name="t", description="T.", requires_approval=broken)
    assert tool_requires_approval(tool, {}) is True
    assert tool_requires_approval(AgentTool(name="u", description="U."), {}) is False
