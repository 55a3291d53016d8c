"""The staff audit page (filters, pages) and its streamed CSV and JSON Lines exports.

Staff only: anyone else gets 404 (the page's existence is not advertised), a signed-out
visitor the login redirect. The exports stream (``StreamingHttpResponse`` over the chunked
reads of ``audit_export_rows``), so a large trail neither times out nor fills memory.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterator
from functools import wraps
from typing import Any

from django.contrib.auth.models import Group
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils.http import urlencode
from django.views.decorators.http import require_GET

from audit_app.models import VERDICTS
from audit_app.selectors import EXPORT_FIELDS, AuditFilters, audit_events, audit_export_rows

__all__ = ["audit_export_csv", "audit_export_jsonl", "audit_page"]

PAGE_SIZE = 50


def _staff_only(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    @wraps(view)
    def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        user = request.user
        if not (user.is_authenticated and user.is_active and user.is_staff):
            raise Http404("no such page")
        return view(request, *args, **kwargs)

    return guarded


@require_GET
@_staff_only
def audit_page(request: HttpRequest) -> HttpResponse:
    filters = AuditFilters.from_query(request.GET)
    page = Paginator(audit_events(filters=filters), PAGE_SIZE).get_page(request.GET.get("page"))
    query = urlencode(filters.as_query())
    return render(
        request,
        "audit_app/audit.html",
        {
            "page": page,
            "filters": filters,
            "query": query,
            "verdicts": VERDICTS,
            "groups": Group.objects.order_by("name").values_list("name", flat=True),
        },
    )


class _Line:
    """A file-like object ``csv.writer`` writes one line into, returned as the line."""

    def write(self, text: str) -> str:
        return text


def _csv_lines(rows: Iterator[dict[str, Any]]) -> Iterator[str]:
    writer = csv.writer(_Line())
    yield writer.writerow(EXPORT_FIELDS)
    for row in rows:
        yield writer.writerow(
            [
                json.dumps(row[f], sort_keys=True) if f == "arguments" else _cell(row[f])
                for f in EXPORT_FIELDS
            ]
        )


def _cell(value: Any) -> Any:
    """A text cell a spreadsheet will not run as a formula (=, +, -, @ at the start)."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value.isoformat() if hasattr(value, "isoformat") else value


def _jsonl_lines(rows: Iterator[dict[str, Any]]) -> Iterator[str]:
    for row in rows:
        yield json.dumps({**row, "created": row["created"].isoformat()}, sort_keys=True) + "\n"


@require_GET
@_staff_only
def audit_export_csv(request: HttpRequest) -> StreamingHttpResponse:
    rows = audit_export_rows(filters=AuditFilters.from_query(request.GET))
    response = StreamingHttpResponse(_csv_lines(rows), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="audit.csv"'
    return response


@require_GET
@_staff_only
def audit_export_jsonl(request: HttpRequest) -> StreamingHttpResponse:
    rows = audit_export_rows(filters=AuditFilters.from_query(request.GET))
    response = StreamingHttpResponse(_jsonl_lines(rows), content_type="application/x-ndjson")
    response["Content-Disposition"] = 'attachment; filename="audit.jsonl"'
    return response
