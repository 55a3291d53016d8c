"""``{{ run.usage|usage_line }}``: a run's tokens and cost in one short line."""

from __future__ import annotations

from typing import Any

from django import template

register = template.Library()


@register.filter
def usage_line(usage: dict[str, Any] | None) -> str:
    """ "1,234 tokens · 0.0123 USD" (or "price unknown"); empty when nothing was counted."""
    if not usage:
        return ""
    total = int(usage.get("prompt_tokens", 0) or 0) + int(usage.get("completion_tokens", 0) or 0)
    if not total:
        return ""
    if usage.get("price_known", True) is False:
        cost = "price unknown"
    else:
        cost = f"{float(usage.get('cost_usd', 0.0) or 0.0):.4f} USD"
    return f"{total:,} tokens · {cost}"
