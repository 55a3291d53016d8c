"""The Programs page: the catalog (the shelf), tool profiles (the cart), staff's global off.

Edits are htmx posts answered with server-rendered partials, so the page never
reloads. Without JavaScript the same forms post normally and redirect back.
Validation failures are rendered inline beside the control that caused them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.models import AbstractBaseUser
from django.http import HttpRequest, HttpResponse, HttpResponseForbidden
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from core.api_errors import DomainError, UnprocessableError
from openprogram.security.workspace_quota import user_workspace_usage
from tools_app import presenters, selectors, services
from tools_app.models import Tool
from tools_app.server_notices import server_notices

__all__ = [
    "catalog",
    "profile_activate",
    "profile_add_tool",
    "profile_create",
    "profile_delete",
    "profile_duplicate",
    "profile_panel",
    "profile_remove_tool",
    "profile_rename",
    "profiles_import",
    "programs_page",
    "tool_detail",
    "tool_toggle_disabled",
]

_STATES = ("enabled", "disabled", "unavailable", "deferred", "missing")
_TOOLS_CHANGED = "tools-changed"
_PROFILE_CHANGED = "profile-changed"


def _page_url(profile: str) -> str:
    return f"{reverse('tools:programs')}?{urlencode({'profile': profile})}"


def _selected(request: HttpRequest, name: str | None) -> str:
    """``name`` if the user has such a profile, else their active one."""
    if name and name in selectors.profile_names(owner=request.user):
        return name
    return selectors.active_profile_name(owner=request.user)


def _area_context(
    owner: AbstractBaseUser, selected: str, errors: dict[str, str] | None = None
) -> dict[str, Any]:
    profiles = selectors.profile_list(owner=owner)
    detail = presenters.profile_detail(owner=owner, name=selected)
    resolved = presenters.resolve_payload(owner=owner, profile_name=selected)
    exposed = selectors.exposed_tool_names()
    in_profile = set(detail["tools"])
    return {
        "profiles": profiles,
        "profile": detail,
        "selected": selected,
        "resolved": resolved,
        "gap": presenters.offer_gap(profile_tools=detail["tools"], resolved=resolved),
        # expose=False helpers (L2) are internals no user picks; the API keeps the full trace.
        "not_offered": [e for e in resolved["explain"] if not e["offered"] and e["layer"] != "L2"],
        "addable": sorted(name for name in exposed if name not in in_profile),
        "errors": errors or {},
    }


def _area(
    request: HttpRequest,
    selected: str,
    *,
    errors: dict[str, str] | None = None,
    changed: bool = False,
) -> HttpResponse:
    """The profiles sidebar and the selected profile's panel (htmx), or a redirect back."""
    if not request.htmx:
        for message in (errors or {}).values():
            messages.error(request, message)
        return redirect(_page_url(selected))
    response = render(
        request,
        "tools_app/_profiles_area.html",
        _area_context(request.user, selected, errors),
    )
    if changed:
        response["HX-Push-Url"] = _page_url(selected)
    # The catalog's badges and the open tool's details follow the selected profile; they
    # refresh on this event, after the swap so they read the new profile's hidden input.
    response["HX-Trigger-After-Swap"] = _PROFILE_CHANGED
    return response


def _catalog_filters(request: HttpRequest) -> dict[str, Any]:
    state = request.GET.get("state") or None
    return {
        "search": request.GET.get("q", "")[:200],
        "source": request.GET.get("source") or None,
        "toolset": request.GET.get("toolset") or None,
        "state": state if state in _STATES else None,
    }


def _catalog_context(request: HttpRequest) -> dict[str, Any]:
    filters = _catalog_filters(request)
    selected = _selected(request, request.GET.get("profile"))
    return {
        "entries": presenters.catalog_entries(owner=request.user, **filters),
        "filters": filters,
        "selected": selected,
        "in_profile": set(selectors.profile_get(owner=request.user, name=selected).tools),
    }


@require_GET
def programs_page(request: HttpRequest) -> HttpResponse:
    asked = request.GET.get("profile", "")
    selected = _selected(request, asked)
    toolsets = sorted({ts for row in selectors.tool_list() for ts in row.toolsets})
    context = {
        **_area_context(request.user, selected),
        **_catalog_context(request),
        "sources": Tool.Source.choices,
        "toolsets": toolsets,
        "states": _STATES,
        "notices": server_notices(),
        "workspace_usage": user_workspace_usage(request.user.pk),
        # A link to a profile this user has none of (gone, mistyped, or someone else's:
        # names are per user) says so and shows their own selected profile instead.
        "profile_missing": asked if asked and asked != selected else "",
    }
    return render(request, "tools_app/programs.html", context)


@require_GET
def catalog(request: HttpRequest) -> HttpResponse:
    return render(request, "tools_app/_catalog.html", _catalog_context(request))


@require_GET
def tool_detail(request: HttpRequest, name: str) -> HttpResponse:
    selected = _selected(request, request.GET.get("profile"))
    return _render_tool(request, name, selected)


def _render_tool(request: HttpRequest, name: str, selected: str, error: str = "") -> HttpResponse:
    try:
        detail = presenters.tool_detail(owner=request.user, name=name, profile_name=selected)
    except DomainError as exc:
        # htmx swaps only 2xx answers; a direct visit gets the honest 404.
        status = 200 if request.htmx else 404
        return render(
            request, "tools_app/_tool_missing.html", {"message": exc.message}, status=status
        )
    context = {
        "tool": detail,
        "schema_json": json.dumps(detail["parameters"], indent=2, sort_keys=True),
        "selected": selected,
        "error": error,
    }
    return render(request, "tools_app/_tool_detail.html", context)


@require_POST
def tool_toggle_disabled(request: HttpRequest, name: str) -> HttpResponse:
    if not request.user.is_staff:
        return HttpResponseForbidden("Only staff can disable tools globally.")
    selected = _selected(request, request.POST.get("profile"))
    try:
        if request.POST.get("disabled") == "1":
            services.tool_disable(name=name, by=request.user, reason=request.POST.get("reason", ""))
        else:
            services.tool_enable(name=name)
    except DomainError as exc:
        return _render_tool(request, name, selected, error=exc.message)
    if not request.htmx:
        return redirect(_page_url(selected))
    response = _render_tool(request, name, selected)
    # The catalog badges and the profile's resolved set listen for this and refresh.
    response["HX-Trigger"] = _TOOLS_CHANGED
    return response


@require_GET
def profile_panel(request: HttpRequest, name: str) -> HttpResponse:
    return _area(request, _selected(request, name))


def _attempt(
    request: HttpRequest, selected: str, key: str, action: Callable[[], str]
) -> HttpResponse:
    """Run a service; on a domain error re-render the area with the message under ``key``."""
    try:
        new_selected = action()
    except DomainError as exc:
        return _area(request, selected, errors={key: exc.message})
    return _area(request, new_selected or selected, changed=True)


@require_POST
def profile_create(request: HttpRequest) -> HttpResponse:
    current = _selected(request, request.POST.get("current"))
    return _attempt(
        request,
        current,
        "create",
        lambda: services.profile_create(owner=request.user, name=request.POST.get("name", "")).name,
    )


def _to_new_name(request: HttpRequest, name: str, action: str, service) -> HttpResponse:
    """Rename and duplicate share a form: the profile's new name in ``new_name``."""
    new_name = request.POST.get("new_name", "")
    return _attempt(
        request,
        _selected(request, name),
        action,
        lambda: service(owner=request.user, name=name, new_name=new_name).name,
    )


@require_POST
def profile_rename(request: HttpRequest, name: str) -> HttpResponse:
    return _to_new_name(request, name, "rename", services.profile_rename)


@require_POST
def profile_duplicate(request: HttpRequest, name: str) -> HttpResponse:
    return _to_new_name(request, name, "duplicate", services.profile_duplicate)


@require_POST
def profile_delete(request: HttpRequest, name: str) -> HttpResponse:
    def delete() -> str:
        services.profile_delete(owner=request.user, name=name)
        return selectors.active_profile_name(owner=request.user)

    return _attempt(request, _selected(request, name), "delete", delete)


@require_POST
def profile_activate(request: HttpRequest, name: str) -> HttpResponse:
    return _attempt(
        request,
        _selected(request, name),
        "activate",
        lambda: services.profile_activate(owner=request.user, name=name),
    )


@require_POST
def profile_add_tool(request: HttpRequest, name: str) -> HttpResponse:
    return _attempt(
        request,
        _selected(request, name),
        "add",
        # Several checkboxes named "tool": add every ticked one at once.
        lambda: (
            services.profile_add_tools(
                owner=request.user, name=name, tools=request.POST.getlist("tool")
            ).name
        ),
    )


@require_POST
def profile_remove_tool(request: HttpRequest, name: str, tool: str) -> HttpResponse:
    return _attempt(
        request,
        _selected(request, name),
        "remove",
        lambda: services.profile_remove_tool(owner=request.user, name=name, tool=tool).name,
    )


@require_POST
def profiles_import(request: HttpRequest) -> HttpResponse:
    current = _selected(request, request.POST.get("current"))
    upload = request.FILES.get("file")

    def do_import() -> str:
        if upload is None:
            raise UnprocessableError("Choose a functions_meta.json file to import.")
        if upload.size > 2_000_000:
            raise UnprocessableError("The file is larger than 2 MB.")
        try:
            data = json.loads(upload.read().decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise UnprocessableError(f"The file is not valid JSON: {exc}") from exc
        services.profiles_import(owner=request.user, data=data)
        return selectors.active_profile_name(owner=request.user)

    return _attempt(request, current, "import", do_import)
