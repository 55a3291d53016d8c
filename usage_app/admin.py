"""Budgets (staff set them here) and the model-call ledger (read-only)."""

from __future__ import annotations

from django.contrib import admin

from usage_app.models import DefaultBudget, GroupBudget, ModelCall, UserBudget


@admin.register(UserBudget)
class UserBudgetAdmin(admin.ModelAdmin):
    list_display = ("user", "monthly_usd")
    search_fields = ("user__username",)
    autocomplete_fields = ("user",)


@admin.register(DefaultBudget)
class DefaultBudgetAdmin(admin.ModelAdmin):
    list_display = ("__str__",)

    def has_add_permission(self, request) -> bool:
        return not DefaultBudget.objects.exists()


@admin.register(GroupBudget)
class GroupBudgetAdmin(admin.ModelAdmin):
    """A cap per member of a group: a member's budget is the smallest that applies."""

    list_display = ("group", "monthly_usd")
    search_fields = ("group__name",)


@admin.register(ModelCall)
class ModelCallAdmin(admin.ModelAdmin):
    list_display = (
        "created",
        "user",
        "model",
        "prompt_tokens",
        "completion_tokens",
        "cached_tokens",
        "cost_usd",
        "price_known",
        "estimated",
    )
    list_filter = ("model", "price_known")
    search_fields = ("user__username", "model")
    date_hierarchy = "created"

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
