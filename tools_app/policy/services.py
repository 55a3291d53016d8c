"""Writes: users' saved "always allow" rules, and the simulator."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError

from core.api_errors import ForbiddenError, NotFoundError, UnprocessableError
from openprogram.programs import registry
from openprogram.programs._resolution_index import registry_index
from openprogram.programs.rule_conditions import FILE_TOOLS
from openprogram.programs.rules import decide, policy_removals, tool_pattern_matches
from tools_app.policy.models import PolicyRule
from tools_app.policy.selectors import policy_always_ask_names, policy_for_user

__all__ = [
    "PolicyRuleInvalid",
    "policy_simulate",
    "policy_user_rule_create",
    "policy_user_rule_delete",
]

MAX_PATTERN_CHARS = 500


class PolicyRuleInvalid(UnprocessableError):
    """A rule that cannot be saved; ``fields`` maps each field to what is wrong with it."""

    def __init__(self, fields: dict[str, str]) -> None:
        super().__init__("; ".join(f"{field}: {message}" for field, message in fields.items()))
        self.fields = fields


def _kind_for(tool: str) -> str:
    if tool == "bash":
        return PolicyRule.ConditionKind.COMMAND
    if tool in FILE_TOOLS:
        return PolicyRule.ConditionKind.PATH
    if tool == "web_fetch":
        return PolicyRule.ConditionKind.HOST
    return PolicyRule.ConditionKind.NONE


def policy_user_rule_create(*, user: AbstractBaseUser, text: str) -> PolicyRule:
    """Save ``user``'s "always allow" from ``tool: pattern`` (``bash: git status``).

    The tool must be registered and not an MCP tool (its server may change what it does
    under the same name) nor marked "always ask". The pattern is a command pattern for
    ``bash``, a path glob for the file tools and a host for ``web_fetch``; other tools
    take no pattern. Whatever is saved can only relax an ask a user may relax
    (``rules.decide``): never a deny, never an admin's ask not marked "may be relaxed".
    """
    if not isinstance(text, str) or len(text) > MAX_PATTERN_CHARS:
        raise PolicyRuleInvalid({"pattern": f"at most {MAX_PATTERN_CHARS} characters"})
    tool, _, pattern = text.partition(":")
    tool, pattern = tool.strip(), pattern.strip()
    known = registry.get(tool)
    if known is None:
        raise PolicyRuleInvalid({"tool": f"no tool named {tool!r}"})
    if known.source == "mcp":
        raise PolicyRuleInvalid({"tool": f"{tool!r} is an MCP tool: ask an admin for a rule"})
    if any(tool_pattern_matches(mark, tool) for mark in policy_always_ask_names()):
        raise PolicyRuleInvalid({"tool": f"an admin marked {tool!r} “always ask”"})
    kind = _kind_for(tool) if pattern else PolicyRule.ConditionKind.NONE
    if pattern and not kind:
        raise PolicyRuleInvalid(
            {"pattern": f"{tool!r} takes no argument pattern (only bash, file tools, web_fetch)"}
        )
    row = PolicyRule(
        scope=PolicyRule.Scope.USER,
        user=user,
        tool=tool,
        verdict=PolicyRule.Verdict.ALLOW,
        condition_kind=kind,
        condition_values=pattern,
        reason="saved from an approval card",
        created_by=user,
    )
    try:
        row.full_clean()
    except ValidationError as exc:
        fields = {
            ("pattern" if field.startswith("condition") else field): " ".join(messages)
            for field, messages in exc.message_dict.items()
        }
        raise PolicyRuleInvalid(fields) from None
    existing = PolicyRule.objects.filter(
        scope=PolicyRule.Scope.USER,
        user=user,
        tool=tool,
        verdict=PolicyRule.Verdict.ALLOW,
        condition_kind=kind,
        condition_values=pattern,
    ).first()
    if existing is not None:
        return existing
    row.save()
    return row


def policy_user_rule_delete(*, user: AbstractBaseUser, rule_id: int) -> None:
    """Revoke one of ``user``'s own saved rules; anyone else's is 404."""
    deleted, _ = PolicyRule.objects.filter(
        pk=rule_id, scope=PolicyRule.Scope.USER, user=user
    ).delete()
    if not deleted:
        raise NotFoundError(f"No saved rule with id {rule_id!r}.")


def policy_simulate(
    *, actor: AbstractBaseUser, user_id: int | None, tool: str, arguments: dict[str, Any]
) -> dict[str, Any]:
    """The verdict on one call for a user: staff for anyone, a user for themselves."""
    if user_id is None or user_id == actor.pk:
        subject = actor
    elif not actor.is_staff:
        raise ForbiddenError("Only staff may simulate the policy for another user.")
    else:
        subject = get_user_model().objects.filter(pk=user_id).first()
        if subject is None:
            raise NotFoundError(f"No user with id {user_id!r}.")
    known = registry.get(tool)
    if known is None:
        raise UnprocessableError(f"tool: no tool named {tool!r}")
    if not isinstance(arguments, dict):
        raise UnprocessableError("arguments: must be a JSON object")
    policy = policy_for_user(user=subject)
    decision = decide(policy, known, arguments)
    removed = policy_removals(policy, registry_index()).get(tool)
    return {
        "user": subject.get_username(),
        "tool": tool,
        **decision.as_dict(),
        "offered": removed is None,
        "removed_because": removed or "",
    }
