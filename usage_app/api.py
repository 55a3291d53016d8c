"""``GET /api/usage``: the caller's usage this month, by day and by model, and their budget."""

from __future__ import annotations

from decimal import Decimal

from ninja import Router, Schema

from usage_app.selectors import (
    budget_for_user,
    month_spend,
    month_start,
    usage_by_day,
    usage_by_model,
)

router = Router(tags=["usage"])


class UsageRow(Schema):
    key: str
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    cost_usd: Decimal
    calls_price_unknown: int


class UsageMonth(Schema):
    month_start: str
    spent_usd: Decimal
    budget_usd: Decimal | None
    by_day: list[UsageRow]
    by_model: list[UsageRow]


def _row(key: str, row: dict) -> UsageRow:
    return UsageRow(
        key=key,
        calls=row["calls"] or 0,
        prompt_tokens=row["prompt_tokens"] or 0,
        completion_tokens=row["completion_tokens"] or 0,
        cached_tokens=row["cached_tokens"] or 0,
        cost_usd=row["cost"] or Decimal(0),
        calls_price_unknown=row["unpriced"] or 0,
    )


@router.get("/usage", response=UsageMonth, summary="My usage and cost this month (UTC)")
def usage_mine(request):
    user_id = request.user.pk
    return UsageMonth(
        month_start=month_start().date().isoformat(),
        spent_usd=month_spend(user_id=user_id),
        budget_usd=budget_for_user(user_id=user_id),
        by_day=[_row(row["day"].isoformat(), row) for row in usage_by_day(user_id=user_id)],
        by_model=[_row(row["model"], row) for row in usage_by_model(user_id=user_id)],
    )
