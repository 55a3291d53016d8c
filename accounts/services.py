"""Account services: the admin account, one-time login links, API tokens."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from accounts.models import ApiToken, LoginToken

__all__ = [
    "InvalidLoginToken",
    "admin_ensure",
    "api_token_authenticate",
    "api_token_create",
    "api_token_verify",
    "login_token_create",
    "login_token_redeem",
]

LOGIN_TOKEN_TTL = timedelta(hours=12)


class InvalidLoginToken(Exception):
    """The login link is unknown, expired or already used."""


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def admin_ensure(*, username: str = "admin") -> AbstractBaseUser:
    """Return the administrator, creating one (with no usable password) if none exists."""
    User = get_user_model()
    existing = User.objects.filter(is_superuser=True).order_by("id").first()
    if existing:
        return existing
    user, _ = User.objects.get_or_create(username=username)
    user.is_staff = True
    user.is_superuser = True
    user.set_unusable_password()
    user.save()
    return user


def login_token_create(*, user: AbstractBaseUser) -> str:
    """Create a one-time login token for ``user`` and return it in clear (shown once)."""
    token = secrets.token_urlsafe(32)
    LoginToken.objects.create(
        user=user, token_hash=_hash(token), expires_at=timezone.now() + LOGIN_TOKEN_TTL
    )
    return token


def login_token_redeem(*, token: str) -> AbstractBaseUser:
    """Spend ``token`` and return its user; raise InvalidLoginToken if it cannot be used."""
    with transaction.atomic():
        row = (
            LoginToken.objects.select_for_update()
            .select_related("user")
            .filter(token_hash=_hash(token))
            .first()
        )
        if row is None or row.used_at is not None or row.expires_at < timezone.now():
            raise InvalidLoginToken("This login link is invalid, expired or already used.")
        if not row.user.is_active:
            raise InvalidLoginToken("This account is deactivated.")
        row.used_at = timezone.now()
        row.save(update_fields=["used_at"])
        return row.user


def api_token_create(*, user: AbstractBaseUser, name: str) -> str:
    """Create an API token for ``user``; the clear token is returned once and never stored."""
    token = "op_" + secrets.token_urlsafe(32)
    ApiToken.objects.create(user=user, name=name, token_hash=_hash(token), prefix=token[:10])
    return token


def api_token_authenticate(*, token: str) -> AbstractBaseUser | None:
    row = api_token_verify(token=token)
    return None if row is None else row.user


def api_token_verify(*, token: str) -> ApiToken | None:
    """The active user's token row for ``token`` (its ``name`` goes into the audit trail)."""
    row = ApiToken.objects.select_related("user").filter(token_hash=_hash(token)).first()
    if row is None or not row.user.is_active:
        return None
    ApiToken.objects.filter(pk=row.pk).update(last_used_at=timezone.now())
    return row
