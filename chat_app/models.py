"""Conversations, their messages, and run history: every turn, event and tool call.

Tool results live here only (spec: "Tool-call results live only in run history and
never enter later prompt context"): a later turn's prompt is built from ``Message``
text, never from ``ToolCallRecord``.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Literal

from django.conf import settings
from django.db import models
from django.utils import timezone

__all__ = [
    "RUN_STATUSES",
    "Conversation",
    "Message",
    "Run",
    "RunEvent",
    "RunStatus",
    "ToolCallRecord",
    "lease_deadline",
]

RunStatus = Literal["running", "completed", "stopped", "error", "step_limit"]
RUN_STATUSES: tuple[RunStatus, ...] = ("running", "completed", "stopped", "error", "step_limit")
TITLE_MAX = 120


def lease_deadline() -> datetime:
    """A fresh run lease: now plus ``CHAT_RUN_LEASE_SECONDS``."""
    return timezone.now() + timedelta(seconds=settings.CHAT_RUN_LEASE_SECONDS)


class Conversation(models.Model):
    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    """What URLs, the API and the socket call a conversation: random, so it cannot be
    guessed (the primary key is a small counting integer and stays internal)."""
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conversations"
    )
    title = models.CharField(max_length=TITLE_MAX, blank=True, default="")
    profile_name = models.CharField(max_length=64, default="default")
    model = models.CharField(max_length=200, default="offline")
    agent_profile = models.ForeignKey(
        "tools_app.AgentProfile",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="conversations",
    )
    tools_on = models.BooleanField(default=True)
    web_search_on = models.BooleanField(default=True)
    plan_mode = models.BooleanField(default=False)
    attended = models.BooleanField(default=True)
    todos = models.JSONField(default=list, blank=True)
    allowed_tools = models.JSONField(default=list, blank=True)
    """Tools the owner allowed for the rest of this conversation (never an always-ask one;
    ``chat_app.approvals`` decides and is the only reader)."""
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated", "-id"]
        indexes = [models.Index(fields=["owner", "-updated"])]

    def __str__(self) -> str:
        return self.title or f"Conversation {self.pk}"

    @property
    def display_title(self) -> str:
        return self.title or "New chat"


class Run(models.Model):
    """One turn: what the model was offered and why, what it did, how it ended."""

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="runs")
    status = models.CharField(
        max_length=16, choices=[(s, s) for s in RUN_STATUSES], default="running"
    )
    model = models.CharField(max_length=200)
    profile_name = models.CharField(max_length=64, default="default")
    attended = models.BooleanField(default=True)
    options = models.JSONField(default=dict, blank=True)
    """The per-turn toggles as sent (tools_on, web_search_on, plan_mode, agent_profile)."""
    tools = models.JSONField(default=list, blank=True)
    deferred = models.JSONField(default=list, blank=True)
    explain = models.JSONField(default=dict, blank=True)
    """The explain trace, compact (``chat_app.explain``): offered names, rejections by reason."""
    warnings = models.JSONField(default=list, blank=True)
    usage = models.JSONField(default=dict, blank=True)
    text = models.TextField(blank=True, default="")
    error = models.TextField(blank=True, default="")
    started = models.DateTimeField(auto_now_add=True)
    finished = models.DateTimeField(null=True, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True, default=lease_deadline)
    """While running: the process running the turn renews this; past it, the run is orphaned."""
    superseded = models.BooleanField(default=False)
    """Replaced by an edit or a regeneration: kept in history, left out of later prompts."""

    class Meta:
        ordering = ["-started", "-id"]
        indexes = [models.Index(fields=["conversation", "status"])]

    def __str__(self) -> str:
        return f"Run {self.pk} ({self.status})"

    @property
    def duration_ms(self) -> float | None:
        if self.finished is None:
            return None
        return (self.finished - self.started).total_seconds() * 1000


class Message(models.Model):
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="messages"
    )
    role = models.CharField(max_length=16, choices=[("user", "user"), ("assistant", "assistant")])
    text = models.TextField(blank=True, default="")
    run = models.ForeignKey(
        Run, on_delete=models.SET_NULL, null=True, blank=True, related_name="messages"
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created", "id"]

    def __str__(self) -> str:
        return f"{self.role}: {self.text[:40]}"


class RunEvent(models.Model):
    """A turn event as relayed to the browser, in order; text deltas are coalesced."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    type = models.CharField(max_length=32)
    payload = models.JSONField(default=dict)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["seq"]
        constraints = [models.UniqueConstraint("run", "seq", name="run_event_unique_seq")]

    def __str__(self) -> str:
        return f"{self.run_id}#{self.seq} {self.type}"


class ToolCallRecord(models.Model):
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="tool_calls")
    call_id = models.CharField(max_length=128)
    name = models.CharField(max_length=128)
    arguments = models.JSONField(default=dict, blank=True)
    status = models.CharField(
        max_length=24,
        choices=[
            (s, s) for s in ("running", "awaiting_approval", "done", "error", "denied", "stopped")
        ],
        default="running",
    )
    result_preview = models.TextField(blank=True, default="")
    is_error = models.BooleanField(default=False)
    truncated = models.BooleanField(default=False)
    full_result_path = models.CharField(max_length=1000, blank=True, default="")
    duration_ms = models.FloatField(default=0.0)
    parent_call_id = models.CharField(max_length=128, blank=True, default="")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created", "id"]
        constraints = [
            models.UniqueConstraint("run", "call_id", name="tool_call_unique_per_run"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.call_id})"
