"""Admin for the catalog (global disables), tool profiles and agent profiles. Staff only."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone

from core.api_errors import UnprocessableError
from tools_app.agent_profile_services import agent_tools_validate
from tools_app.catalog_sync import MIRRORED_FIELDS
from tools_app.models import AgentProfile, Tool, ToolProfile, UserToolSettings
from tools_app.services import profile_validate_name

__all__ = ["AgentProfileAdmin", "ToolAdmin", "ToolProfileAdmin", "UserToolSettingsAdmin"]


class _ReasonForm(forms.Form):
    reason = forms.CharField(
        max_length=500, required=False, widget=forms.TextInput(attrs={"size": 60})
    )


@admin.register(Tool)
class ToolAdmin(admin.ModelAdmin):
    # The one editable column sits next to the name it switches off, with its reason,
    # so the admin's eye and the Save button's row need no scrolling at 1280 px.
    list_display = (
        "name",
        "disabled",
        "disabled_reason",
        "source",
        "server",
        "requires_approval",
        "deferred",
        "exposed",
        "present",
        "last_seen",
    )
    list_display_links = ("name",)
    list_editable = ("disabled", "disabled_reason")
    list_filter = ("disabled", "source", "present", "deferred", "exposed", "requires_approval")
    search_fields = ("name", "label", "description", "server", "package")
    # Everything the registry owns is read-only here; only the global disable is editable.
    readonly_fields = (
        "name",
        *MIRRORED_FIELDS,
        "present",
        "first_seen",
        "last_seen",
        "disabled_by",
        "disabled_at",
    )
    fieldsets = (
        (
            None,
            {"fields": ("name", "label", "description", "source", "server", "package")},
        ),
        (
            "Global disable (layer 5)",
            {"fields": ("disabled", "disabled_reason", "disabled_by", "disabled_at")},
        ),
        (
            "As registered",
            {
                "fields": (
                    "toolsets",
                    "deferred",
                    "requires_approval",
                    "exposed",
                    "parameters",
                    "present",
                    "first_seen",
                    "last_seen",
                )
            },
        ),
    )
    actions = ("disable_selected", "enable_selected")

    def has_add_permission(self, request: HttpRequest) -> bool:
        # Rows mirror the registry; they come from catalog sync, not from typing.
        return False

    def save_model(self, request: HttpRequest, obj: Tool, form, change: bool) -> None:
        if "disabled" in form.changed_data:
            obj.disabled_by = request.user if obj.disabled else None
            obj.disabled_at = timezone.now() if obj.disabled else None
        if not obj.disabled:
            obj.disabled_reason = ""  # a reason only ever explains a disable in force
        super().save_model(request, obj, form, change)

    @admin.action(description="Disable selected tools globally (asks for a reason)")
    def disable_selected(
        self, request: HttpRequest, queryset: QuerySet[Tool]
    ) -> HttpResponse | None:
        if "apply" in request.POST:
            form = _ReasonForm(request.POST)
            if form.is_valid():
                count = queryset.update(
                    disabled=True,
                    disabled_reason=form.cleaned_data["reason"],
                    disabled_by=request.user,
                    disabled_at=timezone.now(),
                )
                self.message_user(request, f"Disabled {count} tool(s) globally.", messages.SUCCESS)
                return None
        else:
            form = _ReasonForm()
        context = {
            **self.admin_site.each_context(request),
            "title": "Disable tools globally",
            "tools": queryset,
            "form": form,
            "action_checkbox_name": ACTION_CHECKBOX_NAME,
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/tools_app/tool/disable_reason.html", context)

    @admin.action(description="Enable selected tools again")
    def enable_selected(self, request: HttpRequest, queryset: QuerySet[Tool]) -> None:
        count = queryset.update(
            disabled=False, disabled_reason="", disabled_by=None, disabled_at=None
        )
        self.message_user(request, f"Enabled {count} tool(s).", messages.SUCCESS)


class _ToolProfileForm(forms.ModelForm):
    """The same name and tool-list rules as the Programs page and the API."""

    class Meta:
        model = ToolProfile
        fields = ("owner", "name", "tools")

    def clean_name(self) -> str:
        try:
            return profile_validate_name(self.cleaned_data.get("name"))
        except UnprocessableError as exc:
            raise forms.ValidationError(exc.message) from exc

    def clean_tools(self) -> list[str]:
        tools = self.cleaned_data.get("tools") or []
        if not isinstance(tools, list) or not all(isinstance(t, str) and t for t in tools):
            raise forms.ValidationError("Tools must be a JSON list of tool names.")
        return tools


@admin.register(ToolProfile)
class ToolProfileAdmin(admin.ModelAdmin):
    form = _ToolProfileForm
    list_display = ("name", "owner", "tool_count", "updated_at")
    list_filter = ("owner",)
    search_fields = ("name", "owner__username")
    raw_id_fields = ("owner",)

    @admin.display(description="tools")
    def tool_count(self, obj: ToolProfile) -> int:
        return len(obj.tools or [])


class _AgentProfileForm(forms.ModelForm):
    """The same ``tools`` rules as the API: a known toolset and lists of tool names."""

    class Meta:
        model = AgentProfile
        fields = ("owner", "name", "model", "system_prompt", "tools")

    def clean(self) -> dict:
        cleaned = super().clean()
        owner = cleaned.get("owner")
        if owner is not None and "tools" in cleaned:
            try:
                cleaned["tools"] = agent_tools_validate(owner, cleaned["tools"])
            except UnprocessableError as exc:
                self.add_error("tools", exc.message)
        return cleaned


@admin.register(AgentProfile)
class AgentProfileAdmin(admin.ModelAdmin):
    form = _AgentProfileForm
    list_display = ("name", "owner", "model", "updated_at")
    list_filter = ("owner",)
    search_fields = ("name", "owner__username", "model")
    raw_id_fields = ("owner",)


@admin.register(UserToolSettings)
class UserToolSettingsAdmin(admin.ModelAdmin):
    list_display = ("user", "active_profile")
    search_fields = ("user__username",)
    raw_id_fields = ("user",)


from tools_app.mcp import admin as mcp_admin  # noqa: E402, F401  (registers the MCP admin)
from tools_app.policy import admin as policy_admin  # noqa: E402, F401
