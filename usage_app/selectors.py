"""Reading usage: a user's month by day and by model, every user's month, budgets."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Context, Decimal
from functools import cache
from typing import Any, Literal

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Count, Q, QuerySet, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from core.model_sql import column, db_value, table
from usage_app.budgets import budget_applies_sql, budget_effective
from usage_app.models import DefaultBudget, ModelCall, UserBudget

__all__ = [
    "UserMonth",
    "budget_and_spend",
    "budget_and_spend_row",
    "budget_and_spend_statement",
    "budget_for_user",
    "month_spend",
    "month_start",
    "usage_all_users",
    "usage_by_day",
    "usage_by_model",
]

SortKey = Literal["user", "calls", "prompt_tokens", "completion_tokens", "cost", "budget"]
SORT_KEYS: tuple[SortKey, ...] = (
    "user",
    "calls",
    "prompt_tokens",
    "completion_tokens",
    "cost",
    "budget",
)


def month_start(now: datetime | None = None) -> datetime:
    """Midnight UTC on the first of the current month: budgets are per calendar month."""
    now = now or timezone.now()
    return now.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def _this_month(user_id: int | None = None) -> QuerySet[ModelCall]:
    calls = ModelCall.objects.filter(created__gte=month_start())
    return calls if user_id is None else calls.filter(user_id=user_id)


def _totals() -> dict:
    return {
        "calls": Count("id"),
        "prompt_tokens": Sum("prompt_tokens"),
        "completion_tokens": Sum("completion_tokens"),
        "cached_tokens": Sum("cached_tokens"),
        "cost": Sum("cost_usd"),
        "unpriced": Count("id", filter=Q(price_known=False)),
    }


def month_spend(*, user_id: int, exclude_run_id: int | None = None) -> Decimal:
    calls = _this_month(user_id)
    if exclude_run_id is not None:
        calls = calls.exclude(run_id=exclude_run_id)
    return calls.aggregate(total=Sum("cost_usd"))["total"] or Decimal(0)


def _decimal(value: object, places: int) -> Decimal | None:
    """A NUMERIC as the ORM reads it: SQLite may hand back a float (15 digits kept)."""
    if value is None:
        return None
    if isinstance(value, float):
        value = Context(prec=15).create_decimal_from_float(value)
    return Decimal(value).quantize(Decimal(1).scaleb(-places))  # type: ignore[arg-type]


@cache
def _budget_and_spend_sql(exclude_run: bool) -> str:
    other_runs = (
        f" AND ({column(ModelCall, 'run')} IS NULL OR {column(ModelCall, 'run')} <> %s)"
        if exclude_run
        else ""
    )
    spend = (
        f"SELECT SUM({column(ModelCall, 'cost_usd')}) FROM {table(ModelCall)}"
        f" WHERE {column(ModelCall, 'user')} = %s AND {column(ModelCall, 'created')} >= %s"
        f"{other_runs}"
    )
    # The month's sum only where there is a budget to hold it against.
    return (
        f"SELECT budget, CASE WHEN budget IS NULL THEN NULL ELSE ({spend}) END"
        f" FROM (SELECT {budget_applies_sql()} AS budget) AS applies"
    )


def budget_and_spend(
    *, user_id: int, exclude_run_id: int | None = None
) -> tuple[Decimal | None, Decimal]:
    """The user's effective budget (:func:`budget_for_user`) and, when there is one, this month's
    spend (:func:`month_spend`; 0 without a budget) in one fixed statement: a turn asks
    before every model call (``chat_app.turn_store`` sends the same statement with the
    turns' other work), and through the ORM this query cost ~1 ms of CPU to build."""
    with connection.cursor() as cursor:
        cursor.execute(*budget_and_spend_statement(user_id=user_id, exclude_run_id=exclude_run_id))
        return budget_and_spend_row(cursor.fetchone())


def budget_and_spend_statement(
    *, user_id: int, exclude_run_id: int | None = None
) -> tuple[str, list[object]]:
    """:func:`budget_and_spend`'s statement and parameters (its answer: one row, for
    :func:`budget_and_spend_row`)."""
    since = db_value(ModelCall, "created", month_start())
    # In the order they appear: the month's sum, then the budget that applies.
    params: list[object] = [user_id, since]
    if exclude_run_id is not None:
        params.append(exclude_run_id)
    params += [user_id, user_id]  # the effective budget's own and group parts
    return _budget_and_spend_sql(exclude_run_id is not None), params


def budget_and_spend_row(row: tuple[Any, Any]) -> tuple[Decimal | None, Decimal]:
    """``(budget, spent)`` from the row :func:`budget_and_spend_statement` answers."""
    budget, spent = row
    return _decimal(budget, 2), _decimal(spent, 8) or Decimal(0)


def budget_for_user(*, user_id: int) -> Decimal | None:
    """The budget that applies (``usage_app.budgets``: the smallest of the user's own, else
    the default, and each of their groups'), else None (no limit)."""
    return budget_effective(user_id=user_id).amount


def usage_by_day(*, user_id: int) -> list[dict]:
    rows = (
        _this_month(user_id)
        .annotate(day=TruncDate("created", tzinfo=UTC))
        .values("day")
        .annotate(**_totals())
        .order_by("day")
    )
    return list(rows)


def usage_by_model(*, user_id: int) -> list[dict]:
    return list(
        _this_month(user_id).values("model").annotate(**_totals()).order_by("-cost", "model")
    )


@dataclass(frozen=True)
class UserMonth:
    user_id: int
    username: str
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost: Decimal
    unpriced: int
    budget: Decimal | None

    @property
    def left(self) -> Decimal | None:
        return None if self.budget is None else max(self.budget - self.cost, Decimal(0))


def usage_all_users(*, sort: str = "cost", descending: bool = True) -> list[UserMonth]:
    """Every user's usage this month (users without calls included), sorted by ``sort``."""
    totals = {row["user_id"]: row for row in _this_month().values("user_id").annotate(**_totals())}
    default = DefaultBudget.objects.values_list("monthly_usd", flat=True).first()
    own = dict(UserBudget.objects.values_list("user_id", "monthly_usd"))
    rows = []
    for user_id, username in get_user_model().objects.values_list("pk", "username"):
        row = totals.get(user_id, {})
        rows.append(
            UserMonth(
                user_id=user_id,
                username=username,
                calls=row.get("calls") or 0,
                prompt_tokens=row.get("prompt_tokens") or 0,
                completion_tokens=row.get("completion_tokens") or 0,
                cost=row.get("cost") or Decimal(0),
                unpriced=row.get("unpriced") or 0,
                budget=own.get(user_id, default),
            )
        )
    key = sort if sort in SORT_KEYS else "cost"
    attribute = {"user": "username"}.get(key, key)

    def sort_value(row: UserMonth) -> tuple:
        value = getattr(row, attribute)
        return (value is None, value if value is not None else 0)

    return sorted(rows, key=sort_value, reverse=descending)


def month_label(today: date | None = None) -> str:
    return (today or month_start()).strftime("%B %Y")
