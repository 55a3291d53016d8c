"""What the account page takes from accounts: the password form and API tokens.

The page itself (openprogram_site/account_page.py) also shows chat and tool settings,
which accounts does not know.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.forms import PasswordChangeForm, SetPasswordForm
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from accounts.models import ApiToken

__all__ = ["TOKEN_NAME_MAX", "api_token_revoke", "password_form"]

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
