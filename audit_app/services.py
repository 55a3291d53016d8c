"""Writes to the audit trail other than recording (``audit_app.recording``): retention."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone

from audit_app.models import AuditEvent

__all__ = ["audit_prune"]


def audit_prune(*, older_than_days: int) -> int:
    """Delete rows recorded more than ``older_than_days`` days ago; the count deleted."""
    if older_than_days < 1:
        raise ValueError(f"older_than_days must be at least 1, not {older_than_days!r}")
    cutoff = timezone.now() - dt.timedelta(days=older_than_days)
    deleted, _ = AuditEvent.objects.filter(created__lt=cutoff).delete()
    return deleted
