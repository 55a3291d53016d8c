"""Admin for organisation and group rules, "always ask" marks and the org's switch.

Every rule is validated by the framework (``PolicyRule.clean`` → ``rules.rule_problems``)
before anything is saved: a malformed glob or pointer, a condition on the wrong tool
or a regex RE2 refuses is shown on its field and nothing is written.
"""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from tools_app.policy.models import AlwaysAskMark, PolicyRule, PolicySettings

__all__ = ["AlwaysAskMarkAdmin", "PolicyRuleAdmin", "PolicySettingsAdmin"]


@admin.register(PolicyRule)
class PolicyRuleAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "scope",
        "group",
        "user",
        "tool",
        "verdict",
        "condition_kind",
        "may_be_relaxed",
        "reason",
    )
    list_filter = ("scope", "verdict", "condition_kind", "may_be_relaxed", "group")
    search_fields = ("tool", "reason", "condition_values", "group__name", "user__username")
    raw_id_fields = ("user",)
    readonly_fields = ("created_at", "created_by")
    fieldsets = (
        (
            None,
            {"fields": ("scope", "group", "user", "tool", "verdict", "may_be_relaxed", "reason")},
        ),
        (
            "Argument condition (optional)",
            {
                "fields": (
                    "condition_kind",
                    "condition_values",
                    "condition_pointer",
                    "condition_op",
                    "condition_value",
                    "condition_negate",
                ),
                "description": "command: bash only; path globs: read, write, edit, list_dir, "
                "glob, grep; host names: web_fetch; JSON pointer: any tool. See docs/policy.md.",
            },
        ),
        ("Record", {"fields": ("created_at", "created_by")}),
    )

    def save_model(self, request: HttpRequest, obj: PolicyRule, form, change: bool) -> None:
        if not change:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)


@admin.register(AlwaysAskMark)
class AlwaysAskMarkAdmin(admin.ModelAdmin):
    list_display = ("tool", "reason")
    search_fields = ("tool", "reason")


@admin.register(PolicySettings)
class PolicySettingsAdmin(admin.ModelAdmin):
    list_display = ("__str__", "deny_by_default")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return not PolicySettings.objects.exists()

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False
