"""The account page: password, settings (theme, defaults for new chats), API tokens.

Staff also see the models this server offers and whether each one's provider key is
set in the server's environment (never the key itself).
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import update_session_auth_hash
from django.contrib.auth.forms import PasswordChangeForm, SetPasswordForm
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from accounts.models import ApiToken, UserPreferences
from accounts.preferences import preferences_get, preferences_update
from accounts.services import api_token_create
from openprogram.security.workspace_quota import user_workspace_usage
from openprogram_site.api_errors import DomainError

__all__ = ["account_page", "api_token_revoke"]

_TOKEN_NAME_MAX = 100


def _password_form(request: HttpRequest, data=None):
    # An account created by `make run` has no usable password yet: it sets one without
    # an old password (it is already signed in through its one-time link).
    form_class = PasswordChangeForm if request.user.has_usable_password() else SetPasswordForm
    form = form_class(request.user, data)
    for field in form.fields.values():  # the page opens on Settings, not in a password box
        field.widget.attrs.pop("autofocus", None)
    return form


@require_http_methods(["GET", "POST"])
def account_page(request: HttpRequest) -> HttpResponse:
    password_form = _password_form(request)
    new_token = None
    token_error = settings_error = ""
    status = 200
    action = request.POST.get("action") if request.method == "POST" else None
    if action == "password":
        password_form = _password_form(request, request.POST)
        if password_form.is_valid():
            password_form.save()
            update_session_auth_hash(request, password_form.user)
            messages.success(request, "Password saved.")
            return redirect("account")
        status = 422
    elif action == "token":
        name = request.POST.get("name", "").strip()
        if not name or len(name) > _TOKEN_NAME_MAX:
            token_error = f"Give the token a name of 1 to {_TOKEN_NAME_MAX} characters."
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
            "password_form": password_form,
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
    from tools_app.services import profile_activate

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
    from chat_app.selectors import model_choices
    from tools_app.selectors import active_profile_name, profile_names

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


@require_POST
def api_token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    deleted, _ = ApiToken.objects.filter(pk=token_id, user=request.user).delete()
    if not deleted:  # another user's token, or none: the same answer
        raise Http404("no such token")
    messages.success(request, "Token revoked.")
    return redirect("account")
