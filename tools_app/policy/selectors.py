"""Reads: the policy that reaches a user, in the framework's terms and in words."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Iterable, Sequence
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, Group
from django.db import connection
from django.db.models import Q

from core.model_sql import column, table
from openprogram.programs import registry
from openprogram.programs._resolution_index import registry_index
from openprogram.programs.rules import PolicySet, decide, policy_removals
from tools_app.policy.models import (
    RULE_COLUMNS,
    AlwaysAskMark,
    PolicyRule,
    PolicySettings,
    rule_from_values,
)

__all__ = [
    "policy_always_ask_names",
    "policy_deny_by_default",
    "policy_for_group",
    "policy_for_user",
    "policy_for_user_statement",
    "policy_from_rows",
    "policy_rules_reaching",
    "policy_tool_verdicts",
    "policy_user_rules",
]


def _deprecated_always_ask() -> tuple[str, ...]:
    names = tuple(sorted(settings.CHAT_ALWAYS_ASK_TOOLS))
    if names:
        warnings.warn(
            'OPENPROGRAM_ALWAYS_ASK_TOOLS is deprecated: mark tools "always ask" in the admin '
            "(Policy → always-ask marks); the setting is still read for this release",
            DeprecationWarning,
            stacklevel=2,
        )
    return names


def policy_always_ask_names() -> tuple[str, ...]:
    """The "always ask" marks (names or globs), the deprecated setting's names included."""
    marks = tuple(AlwaysAskMark.objects.order_by("tool").values_list("tool", flat=True))
    return tuple(dict.fromkeys((*marks, *_deprecated_always_ask())))


def _reaching(user: AbstractBaseUser) -> Q:
    return (
        Q(scope=PolicyRule.Scope.ORG)
        | Q(scope=PolicyRule.Scope.GROUP, group__user=user)
        | Q(scope=PolicyRule.Scope.USER, user=user)
    )


def policy_rules_reaching(*, user: AbstractBaseUser) -> list[PolicyRule]:
    """Organisation rules, the rules of the user's groups and the user's own, in order."""
    return list(PolicyRule.objects.filter(_reaching(user)).select_related("group").distinct())


def policy_deny_by_default() -> bool:
    mode = PolicySettings.objects.filter(pk=1).values_list("deny_by_default", flat=True).first()
    return bool(mode)


def policy_for_user(*, user: AbstractBaseUser) -> PolicySet:
    """The ``PolicySet`` a turn of ``user`` runs under (read fresh: an edit in the admin
    applies to the next turn in every process)."""
    with connection.cursor() as cursor:
        cursor.execute(*policy_for_user_statement(user_id=user.pk))
        return policy_from_rows(cursor.fetchall())


def policy_for_user_statement(*, user_id: int) -> tuple[str, list[object]]:
    """:func:`policy_for_user`'s one statement and parameters: the organisation's rules,
    those of the user's groups and the user's own, the "always ask" marks and the "deny
    by default" switch (its rows: for :func:`policy_from_rows`). Every turn's start sends
    it (``chat_app.turn_store``)."""
    return _policy_sql(), [user_id, user_id]


def policy_from_rows(rows: Iterable[Sequence[Any]]) -> PolicySet:
    """The ``PolicySet`` :func:`policy_for_user_statement`'s rows say."""
    rules, marks, deny_by_default = [], [], False
    width = len(RULE_COLUMNS)
    for kind, group, *values in rows:
        if kind == 0:
            fields = dict(zip(RULE_COLUMNS, values, strict=True))
            rules.append(rule_from_values(group=group, **fields))
        elif kind == 1:
            marks.append(values[2])
        else:
            deny_by_default = bool(values[width - 3])
    return PolicySet(
        rules=tuple(rules),
        always_ask=tuple(dict.fromkeys((*marks, *_deprecated_always_ask()))),
        deny_by_default=deny_by_default,
    )


@functools.cache
def _policy_sql() -> str:
    """Rules (kind 0), marks (kind 1: the name in ``tool``) and the switch (kind 2: in
    ``condition_negate``'s place), as rows of one shape."""
    memberships = get_user_model().groups.through
    columns = ", ".join(f"r.{column(PolicyRule, c)}" for c in RULE_COLUMNS)
    blanks = ["NULL"] * len(RULE_COLUMNS)
    mark = list(blanks)
    mark[2] = column(AlwaysAskMark, "tool")
    switch = list(blanks)
    switch[len(RULE_COLUMNS) - 3] = column(PolicySettings, "deny_by_default")
    scope, owner = column(PolicyRule, "scope"), column(PolicyRule, "user")
    group = column(PolicyRule, "group")
    return (
        f"SELECT 0, g.{column(Group, 'name')}, {columns} FROM {table(PolicyRule)} AS r"
        f" LEFT JOIN {table(Group)} AS g ON g.{column(Group, 'id')} = r.{group}"
        f" WHERE r.{scope} = 'org'"
        f" OR (r.{scope} = 'user' AND r.{owner} = %s)"
        f" OR (r.{scope} = 'group' AND r.{group} IN (SELECT {column(memberships, 'group')}"
        f" FROM {table(memberships)} WHERE {column(memberships, 'user')} = %s))"
        f" UNION ALL SELECT 1, NULL, {', '.join(mark)} FROM {table(AlwaysAskMark)}"
        f" UNION ALL SELECT 2, NULL, {', '.join(switch)} FROM {table(PolicySettings)}"
        f" ORDER BY 1, 3"
    )


def policy_user_rules(*, user: AbstractBaseUser) -> list[dict[str, Any]]:
    """The user's own saved rules (never anyone else's), for Account and the API."""
    rows = PolicyRule.objects.filter(scope=PolicyRule.Scope.USER, user=user).order_by("id")
    return [
        {
            "id": row.pk,
            "tool": row.tool,
            "pattern": row.condition_values.strip(),
            "words": row.as_rule().words(),
            "created_at": row.created_at,
        }
        for row in rows
    ]


def policy_for_group(*, group: Group) -> PolicySet:
    """What a member of ``group`` (and of no other group) runs under, own rules aside."""
    rows = PolicyRule.objects.filter(
        Q(scope=PolicyRule.Scope.ORG) | Q(scope=PolicyRule.Scope.GROUP, group=group)
    ).select_related("group")
    return PolicySet(
        rules=tuple(row.as_rule() for row in rows),
        always_ask=policy_always_ask_names(),
        deny_by_default=policy_deny_by_default(),
    )


def policy_tool_verdicts(*, policy: PolicySet) -> list[dict[str, Any]]:
    """Every registered tool's verdict under ``policy`` with the deciding rule in words.

    A tool layer 5 removes says so (no call could pass); otherwise the verdict is that of
    a call with no arguments, and the tool's conditional rules are counted (they decide
    per call: the simulator shows them at work).
    """
    removed = policy_removals(policy, registry_index())
    rows = []
    for tool in registry.all_tools():
        if not tool.expose:
            continue
        conditional = sum(1 for rule in policy.rules_for(tool.name) if rule.condition)
        if tool.name in removed:
            rows.append(
                {
                    "name": tool.name,
                    "verdict": "removed",
                    "words": removed[tool.name],
                    "conditional": conditional,
                }
            )
            continue
        decision = decide(policy, tool, {})
        rows.append(
            {
                "name": tool.name,
                "verdict": decision.verdict,
                "words": decision.words,
                "conditional": conditional,
            }
        )
    return rows
