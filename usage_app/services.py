"""Recording model calls and checking budgets (the database is the truth)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from usage_app.models import ModelCall
from usage_app.selectors import budget_for_user, month_spend

__all__ = ["budget_refusal", "model_call_record"]


def model_call_record(*, user_id: int, run_id: int | None, event: dict[str, Any]) -> ModelCall:
    """Store one ``model_call`` event of a turn."""
    return ModelCall.objects.create(
        user_id=user_id,
        run_id=run_id,
        model=str(event.get("model", ""))[:200],
        prompt_tokens=max(0, int(event.get("prompt_tokens", 0))),
        completion_tokens=max(0, int(event.get("completion_tokens", 0))),
        cached_tokens=max(0, int(event.get("cached_tokens", 0))),
        cost_usd=Decimal(str(event.get("cost_usd", 0.0))),
        price_known=bool(event.get("price_known", True)),
        estimated=bool(event.get("estimated", False)),
    )


def budget_refusal(*, user_id: int, run_id: int | None, turn_cost: float) -> str | None:
    """A message when the user's monthly budget is spent, else None.

    Counts every recorded call this month except this run's own (those are in
    ``turn_cost``, which may be ahead of what is recorded), so several processes
    and several of the user's turns at once all see the same total.
    """
    budget = budget_for_user(user_id=user_id)
    if budget is None:
        return None
    spent = month_spend(user_id=user_id, exclude_run_id=run_id) + Decimal(str(turn_cost))
    if spent < budget:
        return None
    if turn_cost > 0:
        return (
            f"Stopped: this turn reached your monthly budget ({spent:.2f} of {budget:.2f} USD "
            "spent). The step that crossed it finished; ask an administrator to raise the budget."
        )
    return (
        f"Your monthly budget is spent ({spent:.2f} of {budget:.2f} USD), so no model was "
        "called. It resets on the first of next month (UTC); an administrator can raise it."
    )
