"""``{% user_theme %}``: the signed-in user's theme for ``<html data-theme>`` (no script needed)."""

from __future__ import annotations

from typing import Any

from django import template

from accounts.preferences import preferred_theme

register = template.Library()


@register.simple_tag(takes_context=True)
def user_theme(context: dict[str, Any]) -> str:
    request = context.get("request")
    user = getattr(request, "user", None)
    if user is None:
        return "system"
    return preferred_theme(user=user)
