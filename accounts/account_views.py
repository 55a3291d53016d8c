"""The account page: set or change the password, and create, list and revoke API tokens."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import update_session_auth_hash
from django.contrib.auth.forms import PasswordChangeForm, SetPasswordForm
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from accounts.models import ApiToken
from accounts.services import api_token_create

__all__ = ["account_page", "api_token_revoke"]

_TOKEN_NAME_MAX = 100


def _password_form(request: HttpRequest, data=None):
    # An account created by `make run` has no usable password yet: it sets one without
    # an old password (it is already signed in through its one-time link).
    form_class = PasswordChangeForm if request.user.has_usable_password() else SetPasswordForm
    return form_class(request.user, data)


@require_http_methods(["GET", "POST"])
def account_page(request: HttpRequest) -> HttpResponse:
    password_form = _password_form(request)
    new_token = None
    token_error = ""
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
        },
        status=status,
    )


@require_POST
def api_token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    deleted, _ = ApiToken.objects.filter(pk=token_id, user=request.user).delete()
    if not deleted:  # another user's token, or none: the same answer
        raise Http404("no such token")
    messages.success(request, "Token revoked.")
    return redirect("account")
