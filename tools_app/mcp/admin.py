"""Admin for MCP servers: live status columns, enable/disable, approve, JSON import."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path
from django.utils.html import format_html, format_html_join

from core.api_errors import UnprocessableError
from openprogram.mcp import MCPConfigError, MCPServerConfig
from tools_app.mcp.models import MCPServer
from tools_app.mcp.selectors import mcp_server_status
from tools_app.mcp.services import (
    mcp_server_approve_fingerprints,
    mcp_server_set_enabled,
    mcp_servers_import,
)

__all__ = ["MCPServerAdmin", "MCPServerForm", "MCPServersImportForm"]

_EXAMPLE = """{
  "mcpServers": {
    "time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"]},
    "remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ..."}}
  }
}"""


class MCPServerForm(forms.ModelForm):
    # A URL typed without a scheme is https (Django 6's default; 5.2 warns without it).
    url = MCPServer._meta.get_field("url").formfield(assume_scheme="https")

    class Meta:
        model = MCPServer
        exclude = ("approved_fingerprints",)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if self.errors:
            return cleaned
        try:
            MCPServerConfig(
                name=cleaned.get("name", ""),
                transport=cleaned.get("transport", "stdio"),
                command=cleaned.get("command", ""),
                args=cleaned.get("args") or (),
                env=cleaned.get("env") or {},
                url=cleaned.get("url", ""),
                headers=cleaned.get("headers") or {},
                allow_tools=cleaned.get("allow_tools") or (),
                deny_tools=cleaned.get("deny_tools") or (),
                timeout=cleaned.get("timeout_seconds") or 0,
            )
        except MCPConfigError as exc:
            raise ValidationError(str(exc)) from exc
        return cleaned


class MCPServersImportForm(forms.Form):
    servers_json = forms.CharField(
        label="mcpServers JSON",
        widget=forms.Textarea(attrs={"rows": 16, "cols": 90, "placeholder": _EXAMPLE}),
        help_text="The shape Claude Desktop, Cursor and VS Code use. Same-named servers are updated.",
    )


UNCONFINED_WARNING = (
    "MCP server {name!r} is not confined: it runs with the web process's full rights "
    "(every user's files, the database, the secret key, the network)."
)


def confinement_label(*, server: MCPServer) -> str:
    """How the server runs, as the admin's list shows it."""
    if server.transport != MCPServer.Transport.STDIO:
        return "remote (http)"
    if not server.confined:
        return "⚠ UNCONFINED: full rights"
    return "confined, network on" if server.network else "confined"


class MCPServerAdmin(admin.ModelAdmin):
    form = MCPServerForm
    change_list_template = "admin/tools_app/mcpserver/change_list.html"
    list_display = (
        "name",
        "transport",
        "enabled",
        "always_load",
        "confinement",
        "state",
        "error",
        "tool_count",
        "changed_tools",
    )
    list_filter = ("enabled", "transport", "always_load")
    search_fields = ("name", "command", "url")
    readonly_fields = ("live_status", "approved_fingerprints", "created", "updated")
    actions = ("enable_servers", "disable_servers", "approve_tool_definitions")
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "name",
                    "transport",
                    "enabled",
                    "expose",
                    "always_load",
                    "timeout_seconds",
                )
            },
        ),
        ("stdio", {"fields": ("command", "args", "env", "confined", "network")}),
        ("streamable HTTP", {"fields": ("url", "headers")}),
        (
            "Per-user accounts (OAuth)",
            {"fields": ("per_user_auth", "oauth_client_id", "oauth_client_secret", "oauth_scope")},
        ),
        ("Tools", {"fields": ("allow_tools", "deny_tools", "destructive_without_approval")}),
        ("Status", {"fields": ("live_status", "approved_fingerprints", "created", "updated")}),
    )

    @admin.display(description="confinement")
    def confinement(self, obj: MCPServer) -> str:
        return confinement_label(server=obj)

    def save_model(self, request: Any, obj: MCPServer, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if obj.transport == MCPServer.Transport.STDIO and not obj.confined:
            self.message_user(request, UNCONFINED_WARNING.format(name=obj.name), messages.WARNING)

    @admin.display(description="state")
    def state(self, obj: MCPServer) -> str:
        return mcp_server_status(server=obj)["state"]

    @admin.display(description="error")
    def error(self, obj: MCPServer) -> str:
        return mcp_server_status(server=obj)["error"] or ""

    @admin.display(description="tools")
    def tool_count(self, obj: MCPServer) -> int:
        return len(mcp_server_status(server=obj)["tools"])

    @admin.display(description="changed since approval")
    def changed_tools(self, obj: MCPServer) -> str:
        return ", ".join(mcp_server_status(server=obj)["changed_tools"])

    @admin.display(description="live status")
    def live_status(self, obj: MCPServer) -> str:
        if obj.pk is None:
            return "-"
        status = mcp_server_status(server=obj)
        rows = [
            ("state", status["state"]),
            ("error", status["error"] or "-"),
            ("retries", status["retries"]),
            ("tools", ", ".join(status["tools"]) or "-"),
            ("changed since approval", ", ".join(status["changed_tools"]) or "-"),
        ]
        return format_html(
            "<table>{}</table>",
            format_html_join("", "<tr><th>{}</th><td>{}</td></tr>", rows),
        )

    @admin.action(description="Enable selected MCP servers")
    def enable_servers(self, request: HttpRequest, queryset: QuerySet[MCPServer]) -> None:
        for server in queryset:
            mcp_server_set_enabled(server=server, enabled=True)
        self.message_user(request, f"Enabled {queryset.count()} MCP server(s).")

    @admin.action(description="Disable selected MCP servers (their tools are unregistered)")
    def disable_servers(self, request: HttpRequest, queryset: QuerySet[MCPServer]) -> None:
        for server in queryset:
            mcp_server_set_enabled(server=server, enabled=False)
        self.message_user(request, f"Disabled {queryset.count()} MCP server(s).")

    @admin.action(description="Approve current tool definitions")
    def approve_tool_definitions(self, request: HttpRequest, queryset: QuerySet[MCPServer]) -> None:
        for server in queryset:
            try:
                approved = mcp_server_approve_fingerprints(server=server)
            except UnprocessableError as exc:
                self.message_user(request, exc.message, level=messages.ERROR)
            else:
                self.message_user(
                    request, f"Approved {len(approved)} tool definition(s) of {server.name!r}."
                )

    def get_urls(self) -> list[URLPattern]:
        extra = [
            path(
                "import-json/",
                self.admin_site.admin_view(self.import_view),
                name="tools_app_mcpserver_import",
            )
        ]
        return extra + super().get_urls()

    def import_view(self, request: HttpRequest) -> HttpResponse:
        if not (self.has_add_permission(request) and self.has_change_permission(request)):
            raise PermissionDenied
        form = MCPServersImportForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            try:
                saved = mcp_servers_import(data=form.cleaned_data["servers_json"])
            except UnprocessableError as exc:
                form.add_error("servers_json", exc.message)
            else:
                names = ", ".join(server.name for server in saved)
                self.message_user(request, f"Imported {len(saved)} MCP server(s): {names}.")
                return redirect("admin:tools_app_mcpserver_changelist")
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "form": form,
            "title": "Import MCP servers from JSON",
        }
        return TemplateResponse(request, "admin/tools_app/mcpserver/import_json.html", context)


admin.site.register(MCPServer, MCPServerAdmin)
