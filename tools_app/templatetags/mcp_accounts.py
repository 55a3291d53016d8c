"""``{% mcp_accounts_panel %}``: the Programs page's "your accounts" section."""

from __future__ import annotations

from typing import Any

from django import template

from tools_app.mcp.account_selectors import mcp_account_rows

register = template.Library()


@register.inclusion_tag("tools_app/_mcp_accounts.html", takes_context=True)
def mcp_accounts_panel(context: template.Context) -> dict[str, Any]:
    request = context["request"]
    return {"rows": mcp_account_rows(user=request.user), "csrf_token": context.get("csrf_token")}
