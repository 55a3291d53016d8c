"""What the account page takes from accounts: the password form and API tokens.

The page itself (openprogram_site/account_page.py) also shows chat and tool settings,
which accounts does not know.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.forms import PasswordChangeForm, SetPasswordForm
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from accounts.models import ApiToken
from accounts.preferences import preferences_get, preferences_update

__all__ = ["TOKEN_NAME_MAX", "api_token_revoke", "password_form", "theme_switch"]

TOKEN_NAME_MAX = 100


def password_form(request: HttpRequest, data=None):
    # An account created by `make run` has no usable password yet: it sets one without
    # an old password (it is already signed in through its one-time link).
    form_class = PasswordChangeForm if request.user.has_usable_password() else SetPasswordForm
    form = form_class(request.user, data)
    for field in form.fields.values():  # the page opens on Settings, not in a password box
        field.widget.attrs.pop("autofocus", None)
    return form


@require_POST
def api_token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    deleted, _ = ApiToken.objects.filter(pk=token_id, user=request.user).delete()
    if not deleted:  # another user's token, or none: the same answer
        raise Http404("no such token")
    messages.success(request, "Token revoked.")
    return redirect("account")


_NEXT_THEME = {"light": "dark", "dark": "system", "system": "light"}


@require_POST
def theme_switch(request: HttpRequest) -> HttpResponse:
    """The top bar's theme button: light → dark → system → light, then back to the page."""
    current = preferences_get(user=request.user)
    preferences_update(
        user=request.user,
        theme=_NEXT_THEME.get(current.theme, "light"),
        default_model=current.default_model,
    )
    back = request.POST.get("next", "")
    safe = url_has_allowed_host_and_scheme(
        back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return redirect(back if safe and back.startswith("/") else "/")
