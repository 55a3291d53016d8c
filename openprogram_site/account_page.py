"""The account page: password, settings (theme, defaults for new chats), API tokens.

It lives in the composition root because it composes three apps: the password and
tokens of ``accounts``, the tool profiles of ``tools_app`` and the models of
``chat_app``. Staff also see the models this server offers and whether each one's
provider key is set in the server's environment (never the key itself).
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import update_session_auth_hash
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from accounts.account_views import TOKEN_NAME_MAX, password_form
from accounts.models import ApiToken, UserPreferences
from accounts.preferences import preferences_get, preferences_update
from accounts.services import api_token_create
from accounts.session_revocation import session_rekeyed
from chat_app.selectors import model_choices
from core.api_errors import DomainError
from openprogram.security.workspace_quota import user_workspace_usage
from tools_app.selectors import active_profile_name, profile_names
from tools_app.services import profile_activate

__all__ = ["account_page"]


@require_http_methods(["GET", "POST"])
def account_page(request: HttpRequest) -> HttpResponse:
    form = password_form(request)
    new_token = None
    token_error = settings_error = ""
    status = 200
    action = request.POST.get("action") if request.method == "POST" else None
    if action == "password":
        form = password_form(request, request.POST)
        if form.is_valid():
            # This session's own socket follows its new key; the others close.
            with session_rekeyed(request):
                form.save()
                update_session_auth_hash(request, form.user)
            messages.success(request, "Password saved.")
            return redirect("account")
        status = 422
    elif action == "token":
        name = request.POST.get("name", "").strip()
        if not name or len(name) > TOKEN_NAME_MAX:
            token_error = f"Give the token a name of 1 to {TOKEN_NAME_MAX} characters."
            status = 422
        else:
            new_token = api_token_create(user=request.user, name=name)
    elif action == "preferences":
        settings_error = _preferences_save(request)
        if not settings_error:
            messages.success(request, "Settings saved.")
            return redirect("account")
        status = 422
    elif action is not None:
        status = 400
    return render(
        request,
        "accounts/account.html",
        {
            "password_form": form,
            "has_password": request.user.has_usable_password(),
            "tokens": ApiToken.objects.filter(user=request.user).order_by("-created_at"),
            "new_token": new_token,
            "token_error": token_error,
            "settings_error": settings_error,
            "workspace_usage": user_workspace_usage(request.user.pk),
            **_settings_context(request),
        },
        status=status,
    )


def _preferences_save(request: HttpRequest) -> str:
    """Store theme and default model, then make the chosen profile the active one."""
    try:
        with transaction.atomic():  # all three choices or none
            preferences_update(
                user=request.user,
                theme=request.POST.get("theme", ""),
                default_model=request.POST.get("default_model", ""),
            )
            profile = request.POST.get("default_profile", "")
            if profile:
                profile_activate(owner=request.user, name=profile)
    except DomainError as exc:
        return exc.message
    return ""


def _settings_context(request: HttpRequest) -> dict:
    return {
        "preferences": preferences_get(user=request.user),
        "themes": UserPreferences.Theme.choices,
        "models": settings.OPENPROGRAM_MODELS,
        "server_model": settings.OPENPROGRAM_DEFAULT_MODEL,
        "profiles": profile_names(owner=request.user),
        "active_profile": active_profile_name(owner=request.user),
        # Staff only: which models can be called, and which key is missing (names, never values).
        "model_status": model_choices() if request.user.is_staff else [],
    }
