"""The user's usage page and the staff overview (sortable, CSV export)."""

from __future__ import annotations

import csv

from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from usage_app.budgets import budget_effective
from usage_app.selectors import (
    SORT_KEYS,
    month_label,
    month_spend,
    usage_all_users,
    usage_by_day,
    usage_by_model,
)

__all__ = ["usage_all", "usage_all_csv", "usage_mine"]


@require_GET
def usage_mine(request: HttpRequest) -> HttpResponse:
    user_id = request.user.pk
    effective = budget_effective(user_id=user_id)
    budget = effective.amount
    spent = month_spend(user_id=user_id)
    return render(
        request,
        "usage_app/usage.html",
        {
            "month": month_label(),
            "days": usage_by_day(user_id=user_id),
            "models": usage_by_model(user_id=user_id),
            "spent": spent,
            "budget": budget,
            "budget_source": effective.source,
            "left": None if budget is None else max(budget - spent, 0),
        },
    )


def _sorting(request: HttpRequest) -> tuple[str, bool]:
    sort = request.GET.get("sort", "cost")
    return (sort if sort in SORT_KEYS else "cost"), request.GET.get("dir", "desc") != "asc"


@staff_member_required
@require_GET
def usage_all(request: HttpRequest) -> HttpResponse:
    sort, descending = _sorting(request)
    columns = [
        ("user", "User"),
        ("calls", "Model calls"),
        ("prompt_tokens", "Prompt tokens"),
        ("completion_tokens", "Completion tokens"),
        ("cost", "Cost (USD)"),
        ("budget", "Budget (USD)"),
    ]
    return render(
        request,
        "usage_app/usage_all.html",
        {
            "month": month_label(),
            "rows": usage_all_users(sort=sort, descending=descending),
            "columns": [
                {
                    "key": key,
                    "label": label,
                    "active": key == sort,
                    "next_dir": "asc" if key == sort and descending else "desc",
                    "aria_sort": ("descending" if descending else "ascending")
                    if key == sort
                    else "none",
                }
                for key, label in columns
            ],
            "sort": sort,
            "dir": "desc" if descending else "asc",
        },
    )


def _csv_safe(text: str) -> str:
    # A cell starting with = + - @ is a formula to spreadsheet programs (CSV injection).
    return f"'{text}" if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


@staff_member_required
@require_GET
def usage_all_csv(request: HttpRequest) -> HttpResponse:
    sort, descending = _sorting(request)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="usage-this-month.csv"'
    writer = csv.writer(response)
    writer.writerow(
        [
            "user",
            "model_calls",
            "prompt_tokens",
            "completion_tokens",
            "cost_usd",
            "calls_price_unknown",
            "budget_usd",
        ]
    )
    for row in usage_all_users(sort=sort, descending=descending):
        writer.writerow(
            [
                _csv_safe(row.username),
                row.calls,
                row.prompt_tokens,
                row.completion_tokens,
                f"{row.cost:.6f}",
                row.unpriced,
                "" if row.budget is None else f"{row.budget:.2f}",
            ]
        )
    return response
