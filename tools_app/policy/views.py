"""Pages: the staff Policy page (every tool's verdict for a user or a group, and the
simulator), and revoking one of your own saved rules from Account."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from core.api_errors import DomainError, NotFoundError
from tools_app.policy import selectors, services

__all__ = ["policy_page", "saved_rule_revoke"]


@staff_member_required
def policy_page(request: HttpRequest) -> HttpResponse:
    """Pick a user or a group: every tool's verdict with the rule that decides it."""
    users = list(get_user_model().objects.order_by("username").values_list("pk", "username"))
    groups = list(Group.objects.order_by("name").values_list("pk", "name"))
    subject, rows = _chosen(request)
    simulation: dict[str, Any] | None = None
    error = ""
    if request.method == "POST":
        try:
            arguments = json.loads(request.POST.get("arguments") or "{}")
            simulation = services.policy_simulate(
                actor=request.user,
                user_id=int(request.POST.get("user") or request.user.pk),
                tool=request.POST.get("tool", "").strip(),
                arguments=arguments,
            )
        except (ValueError, DomainError) as exc:
            error = str(exc)
    return render(
        request,
        "tools_app/policy.html",
        {
            "users": users,
            "groups": groups,
            "subject": subject,
            "rows": rows,
            "simulation": simulation,
            "simulate_error": error,
            "posted": request.POST if request.method == "POST" else {},
        },
    )


def _chosen(request: HttpRequest) -> tuple[str, list[dict[str, Any]]]:
    user_id, group_id = request.GET.get("user"), request.GET.get("group")
    if user_id and user_id.isdigit():
        user = get_user_model().objects.filter(pk=int(user_id)).first()
        if user is not None:
            return f"user {user.get_username()!r}", selectors.policy_tool_verdicts(
                policy=selectors.policy_for_user(user=user)
            )
    if group_id and group_id.isdigit():
        group = Group.objects.filter(pk=int(group_id)).first()
        if group is not None:
            return f"group {group.name!r}", selectors.policy_tool_verdicts(
                policy=selectors.policy_for_group(group=group)
            )
    return "", []


@require_POST
def saved_rule_revoke(request: HttpRequest, rule_id: int) -> HttpResponse:
    """Account's "revoke": one of your own saved rules (anyone else's is 404)."""
    try:
        services.policy_user_rule_delete(user=request.user, rule_id=rule_id)
    except NotFoundError as exc:
        raise Http404(str(exc)) from None
    return redirect("account")
