"""Agent profiles on the Programs pages: list, create, edit, delete (htmx partials).

Each profile is one form; saving re-renders the list with any error shown beside
the profile it belongs to. The rules live in ``agent_profile_services``.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from core.api_errors import DomainError
from openprogram.programs.toolsets import known_toolset_names
from tools_app import agent_profile_services, selectors

__all__ = ["agent_profile_delete", "agent_profile_save", "agent_profiles_page"]

_LIST_FIELDS = ("enabled", "disabled", "allowed")


def _names(text: str) -> list[str]:
    """A comma- or whitespace-separated field as a list of tool names."""
    return [part for part in text.replace(",", " ").split() if part]


def _context(owner: AbstractBaseUser, errors: dict[str, str] | None = None) -> dict[str, Any]:
    agents = selectors.agent_profile_list(owner=owner)
    shown = {"new", *(str(agent.pk) for agent in agents)}
    errors = errors or {}
    return {
        "agents": agents,
        # An error about a profile not on the page (another user's id) shows at the top.
        "general_errors": [message for key, message in errors.items() if key not in shown],
        "tool_profiles": selectors.profile_names(owner=owner),
        # Presets and author-declared toolsets; "default"/"none" are the blank choice.
        "presets": [n for n in known_toolset_names() if n not in ("default", "none")],
        "models": settings.OPENPROGRAM_MODELS,
        "errors": errors,
    }


def _list(request: HttpRequest, errors: dict[str, str] | None = None) -> HttpResponse:
    if not request.htmx:
        return redirect(reverse("tools:agents"))
    return render(request, "tools_app/_agent_profiles.html", _context(request.user, errors))


@require_GET
def agent_profiles_page(request: HttpRequest) -> HttpResponse:
    return render(request, "tools_app/agent_profiles.html", _context(request.user))


@require_POST
def agent_profile_save(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    """Create (no ``pk``) or update one agent profile from its form."""
    post = request.POST
    fields = {
        "name": post.get("name", ""),
        "model": post.get("model", ""),
        "system_prompt": post.get("system_prompt", ""),
        "tools": {
            "toolset": post.get("toolset") or None,
            **{key: _names(post.get(key, "")) for key in _LIST_FIELDS},
        },
    }
    try:
        if pk is None:
            agent_profile_services.agent_profile_create(owner=request.user, **fields)
        else:
            agent_profile_services.agent_profile_update(owner=request.user, pk=pk, **fields)
    except DomainError as exc:
        return _list(request, errors={str(pk or "new"): exc.message})
    return _list(request)


@require_POST
def agent_profile_delete(request: HttpRequest, pk: int) -> HttpResponse:
    try:
        agent_profile_services.agent_profile_delete(owner=request.user, pk=pk)
    except DomainError as exc:
        return _list(request, errors={str(pk): exc.message})
    return _list(request)
