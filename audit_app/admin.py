"""The trail in the admin: read-only for everyone, superusers included."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from audit_app.models import AuditEvent


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ("created", "username", "tool", "verdict", "outcome", "channel", "decided_by")
    list_filter = ("verdict", "outcome", "channel")
    search_fields = ("username", "tool", "rule", "decided_by", "call_id")
    date_hierarchy = "created"
    actions = None

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
