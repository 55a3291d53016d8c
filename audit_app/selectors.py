"""Reading the audit trail: the staff page's filters, and chunked rows for the exports."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet

from audit_app.models import VERDICTS, AuditEvent

__all__ = ["EXPORT_CHUNK", "EXPORT_FIELDS", "AuditFilters", "audit_events", "audit_export_rows"]

EXPORT_CHUNK = 500
"""Rows per database read of an export: memory holds one chunk, whatever the trail's size."""

EXPORT_FIELDS = (
    "id",
    "created",
    "username",
    "tool",
    "verdict",
    "rule",
    "decided_by",
    "outcome",
    "duration_ms",
    "channel",
    "channel_detail",
    "conversation_id",
    "run_id",
    "call_id",
    "arguments_sha256",
    "arguments",
)


@dataclass(frozen=True)
class AuditFilters:
    """What the staff page filters on; every field optional, each parsed strictly."""

    user: str = ""
    group: str = ""
    tool: str = ""
    verdict: str = ""
    since: dt.date | None = None
    until: dt.date | None = None

    @classmethod
    def from_query(cls, query: Any) -> AuditFilters:
        verdict = query.get("verdict", "")
        return cls(
            user=query.get("user", "").strip(),
            group=query.get("group", "").strip(),
            tool=query.get("tool", "").strip(),
            verdict=verdict if verdict in VERDICTS else "",
            since=_date(query.get("since", "")),
            until=_date(query.get("until", "")),
        )

    def as_query(self) -> dict[str, str]:
        values = {
            "user": self.user,
            "group": self.group,
            "tool": self.tool,
            "verdict": self.verdict,
            "since": self.since.isoformat() if self.since else "",
            "until": self.until.isoformat() if self.until else "",
        }
        return {k: v for k, v in values.items() if v}


def _date(text: str) -> dt.date | None:
    try:
        return dt.date.fromisoformat(text.strip())
    except ValueError:
        return None


def audit_events(*, filters: AuditFilters) -> QuerySet[AuditEvent]:
    """The trail, newest first, narrowed by ``filters``.

    ``user`` matches the username snapshot (a deleted user's rows still match); ``group``
    the users now in that group; ``until`` includes its whole day.
    """
    rows = AuditEvent.objects.all()
    if filters.user:
        rows = rows.filter(username=filters.user)
    if filters.group:
        rows = rows.filter(user__groups__name=filters.group)
    if filters.tool:
        rows = rows.filter(tool=filters.tool)
    if filters.verdict:
        rows = rows.filter(verdict=filters.verdict)
    if filters.since:
        rows = rows.filter(created__date__gte=filters.since)
    if filters.until:
        rows = rows.filter(created__date__lte=filters.until)
    return rows.order_by("-created", "-id")


def audit_export_rows(*, filters: AuditFilters) -> Iterator[dict[str, Any]]:
    """Every matching row as a dict, read ``EXPORT_CHUNK`` rows at a time (a server-side
    cursor on PostgreSQL, chunked fetches on SQLite): memory stays bounded."""
    rows = audit_events(filters=filters).values(*EXPORT_FIELDS)
    yield from rows.iterator(chunk_size=EXPORT_CHUNK)
