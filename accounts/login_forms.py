"""The sign-in forms (site and admin), both throttled by ``accounts.login_throttle``.

With ``OIDC_SSO_ONLY`` the site's form signs in staff only. A non-staff account with the
right password gets the same answer as a wrong password (checked after the password, so
the answer and its timing tell nothing), and counts as a failure.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm

from accounts.login_throttle import (
    client_address,
    login_failure_record,
    login_failures_clear,
    login_lockout,
)

__all__ = ["THROTTLED", "ThrottledAdminAuthenticationForm", "ThrottledAuthenticationForm"]

THROTTLED = "throttled"
"""The error code of a refusal because of too many failures (the view answers 429)."""


class _Throttled:
    """Check the lock before the password, count a failure, clear the account on success."""

    request: Any
    cleaned_data: dict[str, Any]

    def clean(self) -> dict[str, Any]:
        username = self.cleaned_data.get("username") or ""
        address = client_address(self.request)
        message = login_lockout(username=username, address=address)
        if message:
            raise forms.ValidationError(message, code=THROTTLED)
        try:
            cleaned = super().clean()  # type: ignore[misc]
        except forms.ValidationError:
            if username:
                login_failure_record(username=username, address=address)
            raise
        login_failures_clear(username=username)
        return cleaned


class ThrottledAuthenticationForm(_Throttled, AuthenticationForm):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if settings.OIDC_SSO_ONLY:
            self.error_messages = {
                **self.error_messages,
                "invalid_login": (
                    "Your username and password didn't match, or your account signs in "
                    f"with {settings.OIDC_PROVIDER_NAME} only."
                ),
            }

    def confirm_login_allowed(self, user: Any) -> None:
        super().confirm_login_allowed(user)
        if settings.OIDC_SSO_ONLY and not user.is_staff:
            raise self.get_invalid_login_error()


class ThrottledAdminAuthenticationForm(_Throttled, AdminAuthenticationForm):
    pass
