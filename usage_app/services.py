"""Recording model calls and checking budgets (the database is the truth)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from usage_app.models import ModelCall

__all__ = ["budget_verdict", "model_call_fields", "model_call_record"]

_MAX_TOKENS = 2**31 - 1
"""PositiveIntegerField's range on every backend."""
_MAX_COST = Decimal("999999.99999999")
"""What ModelCall.cost_usd (14 digits, 8 decimal places) holds."""


def _tokens(value: Any) -> int:
    try:
        return min(max(0, int(value)), _MAX_TOKENS)
    except (TypeError, ValueError, OverflowError):
        return 0


def _cost(value: Any) -> Decimal:
    try:
        cost = Decimal(str(value))
    except ArithmeticError:
        return Decimal(0)
    if not cost.is_finite() or cost < 0:
        return Decimal(0)
    return min(cost, _MAX_COST).quantize(Decimal("0.00000001"))


def model_call_fields(event: dict[str, Any]) -> dict[str, Any]:
    """A ``model_call`` event's ledger row (without user and run), every value inside
    its column's range, so the database has no reason to refuse it."""
    return {
        "model": str(event.get("model", ""))[:200],
        "prompt_tokens": _tokens(event.get("prompt_tokens", 0)),
        "completion_tokens": _tokens(event.get("completion_tokens", 0)),
        "cached_tokens": _tokens(event.get("cached_tokens", 0)),
        "cost_usd": _cost(event.get("cost_usd", 0.0)),
        "price_known": bool(event.get("price_known", True)),
        "estimated": bool(event.get("estimated", False)),
    }


def model_call_record(*, user_id: int, run_id: int | None, event: dict[str, Any]) -> ModelCall:
    """Store one ``model_call`` event of a turn (a turn's steps write theirs with their
    history: ``chat_app.turn_store.record``)."""
    return ModelCall.objects.create(user_id=user_id, run_id=run_id, **model_call_fields(event))


def budget_verdict(*, budget: Decimal | None, recorded: Decimal, turn_cost: float) -> str | None:
    """A message when the user's monthly budget is spent, else None, from
    ``usage_app.selectors.budget_and_spend`` (or its statement, ``budget_and_spend_row``) already read.

    ``recorded`` counts every recorded call this month except this run's own (those are
    in ``turn_cost``, which may be ahead of what is recorded), so several processes and
    several of the user's turns at once all see the same total.
    """
    if budget is None:
        return None
    spent = recorded + Decimal(str(turn_cost))
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
