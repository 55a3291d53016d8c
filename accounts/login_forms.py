"""The sign-in forms (site and admin), both throttled by ``accounts.login_throttle``."""

from __future__ import annotations

from typing import Any

from django import forms
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
    pass


class ThrottledAdminAuthenticationForm(_Throttled, AdminAuthenticationForm):
    pass
