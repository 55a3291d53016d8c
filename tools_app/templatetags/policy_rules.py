"""``{% policy_rules_reaching %}`` (Programs) and ``{% policy_saved_rules %}`` (Account):
the team policy that reaches the signed-in user, in words — never another user's rules."""

from __future__ import annotations

from typing import Any

from django import template

from tools_app.policy.selectors import (
    policy_always_ask_names,
    policy_deny_by_default,
    policy_rules_reaching,
    policy_user_rules,
)

register = template.Library()


@register.inclusion_tag("tools_app/_policy_reaching.html", takes_context=True)
def policy_rules_reaching_panel(context: template.Context) -> dict[str, Any]:
    user = context["request"].user
    return {
        "words": [row.as_rule().words() for row in policy_rules_reaching(user=user)],
        "always_ask": policy_always_ask_names(),
        "deny_by_default": policy_deny_by_default(),
    }


@register.inclusion_tag("tools_app/_policy_saved.html", takes_context=True)
def policy_saved_rules(context: template.Context) -> dict[str, Any]:
    return {
        "rules": policy_user_rules(user=context["request"].user),
        "csrf_token": context.get("csrf_token"),
    }
