"""The audit trail: one append-only row per decided tool call (docs/security.md, "Audit trail").

A row outlives what it describes: the conversation and run are plain values (no
foreign key, so deleting a chat cascades nothing here) and the user is kept as a
username snapshot next to a ``SET_NULL`` link. Rows are never changed: the admin is
read-only, retention deletes only through ``manage.py audit_prune``, and on PostgreSQL a
trigger refuses every UPDATE but the one a user's deletion makes (``user`` to NULL).
"""

from __future__ import annotations

from typing import Literal

from django.conf import settings
from django.db import models

__all__ = ["CHANNELS", "OUTCOMES", "VERDICTS", "AuditEvent", "Channel", "Outcome", "Verdict"]

Verdict = Literal["allow", "ask", "deny", "approved", "denied", "refused_unattended", "undecided"]
VERDICTS: tuple[Verdict, ...] = (
    "allow",
    "ask",
    "deny",
    "approved",
    "denied",
    "refused_unattended",
    "undecided",
)
Outcome = Literal["ok", "error", "stopped", "not_run"]
OUTCOMES: tuple[Outcome, ...] = ("ok", "error", "stopped", "not_run")
Channel = Literal["chat", "api", "nested"]
CHANNELS: tuple[Channel, ...] = ("chat", "api", "nested")


class AuditEvent(models.Model):
    created = models.DateTimeField(db_index=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    username = models.CharField(max_length=150, blank=True, default="")
    """Who ran the turn, as named when the call was recorded (kept when the user is deleted)."""
    tool = models.CharField(max_length=128, db_index=True)
    arguments = models.JSONField(default=dict, blank=True)
    """Redacted (``audit_app.recording.redacted_arguments``): server paths hidden, secret-named
    values masked, long strings cut."""
    arguments_sha256 = models.CharField(max_length=64, blank=True, default="")
    """SHA-256 of the unredacted arguments' canonical JSON: proves what ran without storing it."""
    verdict = models.CharField(max_length=24, choices=[(v, v) for v in VERDICTS])
    rule = models.CharField(max_length=500, blank=True, default="")
    """The deciding policy rule in words, when a rule decided."""
    decided_by = models.CharField(max_length=150, blank=True, default="")
    """The person who approved or denied (from whichever tab)."""
    outcome = models.CharField(max_length=16, choices=[(o, o) for o in OUTCOMES])
    duration_ms = models.FloatField(default=0.0)
    channel = models.CharField(max_length=16, choices=[(c, c) for c in CHANNELS])
    channel_detail = models.CharField(max_length=200, blank=True, default="")
    conversation_id = models.BigIntegerField(null=True, blank=True)
    run_id = models.BigIntegerField(null=True, blank=True)
    call_id = models.CharField(max_length=128, blank=True, default="")

    class Meta:
        ordering = ["-created", "-id"]
        indexes = [
            models.Index(fields=["user", "-created"]),
            models.Index(fields=["verdict", "-created"]),
        ]

    def __str__(self) -> str:
        return f"{self.username or '?'}: {self.tool} ({self.verdict}, {self.outcome})"
