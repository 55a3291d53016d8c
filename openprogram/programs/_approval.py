"""Layer of the executor that asks a human before a risky call runs.

``requires_approval`` is a bool or a callable on the validated arguments; it is the
tool's default, which the team policy (``rules.decide``) may tighten or relax. When
the verdict is ask, the question goes to the approval hook of the current turn
(:func:`openprogram.agent.context.get_turn`); without a turn or a hook the call
is denied, because nobody can approve it (fail closed).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from openprogram.agent.context import get_turn
from openprogram.agent.types import AgentTool, ApprovalDecision, ApprovalRequest

if TYPE_CHECKING:
    from openprogram.programs.rules import PolicyDecision

__all__ = ["tool_requires_approval"]

_log = logging.getLogger(__name__)


def tool_requires_approval(tool: AgentTool, args: dict[str, Any]) -> bool:
    """Whether this call of ``tool`` must be approved; a raising predicate means yes."""
    rule = tool.requires_approval
    if not callable(rule):
        return bool(rule)
    try:
        return bool(rule(args))
    except Exception:
        _log.exception("requires_approval of tool %r raised; asking for approval", tool.name)
        return True


async def _evaluate_approval(
    tool: AgentTool, *, call_id: str, args: dict[str, Any], policy: PolicyDecision
) -> ApprovalDecision:
    """Approved when the verdict is allow; asked when ask; refused (naming the rule) on deny."""
    from openprogram.programs.call_rules import suggestion

    if policy.verdict == "allow":
        return ApprovalDecision(approved=True)
    if policy.verdict == "deny":
        return ApprovalDecision(approved=False, reason=f"refused by policy: {policy.words}")
    rule = policy.words if policy.source != "default" else ""
    turn = get_turn()
    if turn is None or turn.approval_hook is None:
        why = f" ({rule})" if rule else ""
        return ApprovalDecision(
            approved=False,
            reason=f"tool {tool.name!r} needs approval{why} but no approver is attached to this turn",
        )
    request = ApprovalRequest(
        call_id=call_id,
        tool_name=tool.name,
        arguments=args,
        reason=f"{tool.name!r} asks to run with these arguments",
        rule=rule,
        user_may_allow=policy.user_may_allow,
        suggestion=suggestion(tool, args) if policy.user_may_allow else "",
    )
    try:
        return await turn.approval_hook(request)
    except Exception as exc:
        _log.exception("approval hook failed for tool %r call %r", tool.name, call_id)
        return ApprovalDecision(
            approved=False, reason=f"the approval hook failed ({type(exc).__name__})"
        )
