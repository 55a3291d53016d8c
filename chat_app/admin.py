"""Admin: conversations with their messages, runs with read-only tool calls and events."""

from __future__ import annotations

from django.contrib import admin

from chat_app.models import Conversation, Message, Run, RunEvent, ToolCallRecord


class _ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


class MessageInline(_ReadOnlyInline):
    model = Message
    fields = ("role", "text", "run", "created")
    readonly_fields = fields


class ToolCallInline(_ReadOnlyInline):
    model = ToolCallRecord
    fields = (
        "call_id",
        "name",
        "arguments",
        "status",
        "is_error",
        "truncated",
        "duration_ms",
        "parent_call_id",
        "result_preview",
    )
    readonly_fields = fields


class RunEventInline(_ReadOnlyInline):
    model = RunEvent
    fields = ("seq", "type", "payload", "created")
    readonly_fields = fields


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ("id", "title", "owner", "profile_name", "model", "attended", "updated")
    list_filter = ("model", "attended", "plan_mode")
    search_fields = ("title", "owner__username")
    raw_id_fields = ("owner", "agent_profile")
    inlines = [MessageInline]


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("id", "conversation", "status", "model", "profile_name", "started", "finished")
    list_filter = ("status", "model")
    search_fields = ("conversation__title", "conversation__owner__username", "text")
    readonly_fields = (
        "conversation",
        "status",
        "model",
        "profile_name",
        "attended",
        "options",
        "tools",
        "deferred",
        "explain",
        "warnings",
        "usage",
        "text",
        "error",
        "started",
        "finished",
        "lease_until",
    )
    inlines = [ToolCallInline, RunEventInline]

    def has_add_permission(self, request) -> bool:
        return False
