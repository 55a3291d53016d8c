"""Which monthly budget applies to a user: the smallest of theirs and each of their groups'.

"Theirs" is the user's own budget, else the default one. Each of the user's groups may
cap its members (``GroupBudget``); the effective budget is the smallest of all of
these, and None (no limit) only when none applies. :func:`budget_applies_sql` is the
same rule as one SQL expression, for the turn's budget read
(``selectors.budget_and_spend_statement``, which ``chat_app.turn_store`` sends);
:func:`budget_effective` says it in words for the usage page and the API.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from functools import cache

from django.contrib.auth import get_user_model

from core.model_sql import column, table
from usage_app.models import DefaultBudget, GroupBudget, UserBudget

__all__ = ["EffectiveBudget", "budget_applies_sql", "budget_effective"]


@dataclass(frozen=True)
class EffectiveBudget:
    amount: Decimal | None
    source: str
    """Whose budget it is, in words: ``your own``, ``the default``, ``group 'interns'``."""


def budget_effective(*, user_id: int) -> EffectiveBudget:
    """The budget that applies to ``user_id`` and where it comes from (module doc)."""
    own = UserBudget.objects.filter(user_id=user_id).values_list("monthly_usd", flat=True).first()
    candidates: list[tuple[Decimal, str]] = []
    if own is not None:
        candidates.append((own, "your own"))
    else:
        default = DefaultBudget.objects.values_list("monthly_usd", flat=True).first()
        if default is not None:
            candidates.append((default, "the default"))
    memberships = get_user_model().groups.through.objects.filter(user_id=user_id)
    groups = GroupBudget.objects.filter(group_id__in=memberships.values("group_id")).select_related(
        "group"
    )
    candidates.extend((row.monthly_usd, f"group {row.group.name!r}") for row in groups)
    if not candidates:
        return EffectiveBudget(None, "no limit")
    amount, source = min(candidates, key=lambda candidate: candidate[0])
    return EffectiveBudget(amount, source)


@cache
def budget_applies_sql() -> str:
    """The effective budget as one scalar SQL expression; it takes the user id twice."""
    memberships = get_user_model().groups.through
    own = (
        f"SELECT {column(UserBudget, 'monthly_usd')} FROM {table(UserBudget)}"
        f" WHERE {column(UserBudget, 'user')} = %s"
    )
    default = (
        f"SELECT {column(DefaultBudget, 'monthly_usd')} FROM {table(DefaultBudget)}"
        f" ORDER BY {column(DefaultBudget, 'id')} LIMIT 1"
    )
    groups = (
        f"SELECT MIN(g.{column(GroupBudget, 'monthly_usd')}) FROM {table(GroupBudget)} AS g"
        f" JOIN {table(memberships)} AS m"
        f" ON m.{column(memberships, 'group')} = g.{column(GroupBudget, 'group')}"
        f" WHERE m.{column(memberships, 'user')} = %s"
    )
    # MIN ignores NULLs: no own/default budget or no group cap simply drops out.
    return (
        f"(SELECT MIN(b) FROM (SELECT COALESCE(({own}), ({default})) AS b"
        f" UNION ALL SELECT ({groups})) AS candidates)"
    )
