"""Failed password logins, counted per account and per client address, in the database.

``LOGIN_MAX_FAILURES_PER_ACCOUNT`` wrong passwords for one account name within
``LOGIN_LOCKOUT_SECONDS`` lock that account name; ``LOGIN_MAX_FAILURES_PER_ADDRESS``
from one address lock that address (whatever names it tries). While locked, the
password is not even checked, so guessing learns nothing; the lock lifts by itself
when the oldest counted failure is older than the window. A successful login clears
its account's failures (not its address's: logging in to one's own account between
guesses must not reset the count). Rows in the database rather than a cache, so every
daphne process counts the same failures.

Login links (``manage.py login_link``) are single-use random tokens and are not
throttled: they are how an operator gets back in to a locked account.
"""

from __future__ import annotations

import math
from datetime import timedelta

from django.conf import settings
from django.http import HttpRequest
from django.utils import timezone

from accounts.models import LoginFailure

__all__ = [
    "client_address",
    "login_failure_record",
    "login_failures_clear",
    "login_lockout",
]


def client_address(request: HttpRequest | None) -> str:
    """The peer address daphne reports (with ``--proxy-headers``, the forwarded one)."""
    if request is None:
        return "unknown"
    return (request.META.get("REMOTE_ADDR") or "unknown")[:64]


def _account(username: str) -> str:
    return username.strip().lower()[:150]


def _window() -> timedelta:
    return timedelta(seconds=settings.LOGIN_LOCKOUT_SECONDS)


def _locked_for(failures, limit: int) -> int | None:
    """Seconds until the lock lifts, or None when fewer than ``limit`` failures count."""
    if not limit:
        return None
    now = timezone.now()
    recent = list(
        failures.filter(at__gt=now - _window()).order_by("-at").values_list("at", flat=True)[:limit]
    )
    if len(recent) < limit:
        return None
    return max(1, math.ceil((recent[-1] + _window() - now).total_seconds()))


def _wait_text(seconds: int) -> str:
    if seconds < 60:
        return f"{seconds} seconds"
    minutes = math.ceil(seconds / 60)
    return f"{minutes} minute{'s' if minutes != 1 else ''}"


def login_lockout(*, username: str, address: str) -> str | None:
    """The message to show when this account name or address is locked, else None."""
    account_wait = _locked_for(
        LoginFailure.objects.filter(username=_account(username)),
        settings.LOGIN_MAX_FAILURES_PER_ACCOUNT,
    )
    if account_wait is not None:
        return (
            "Too many failed sign-in attempts for this account. "
            f"Try again in {_wait_text(account_wait)}, or use a login link."
        )
    address_wait = _locked_for(
        LoginFailure.objects.filter(address=address), settings.LOGIN_MAX_FAILURES_PER_ADDRESS
    )
    if address_wait is not None:
        return (
            "Too many failed sign-in attempts from your address. "
            f"Try again in {_wait_text(address_wait)}."
        )
    return None


def login_failure_record(*, username: str, address: str) -> None:
    LoginFailure.objects.create(username=_account(username), address=address)
    # Old rows count for nothing; drop them as new ones arrive so the table stays small.
    LoginFailure.objects.filter(at__lt=timezone.now() - 2 * _window()).delete()


def login_failures_clear(*, username: str) -> None:
    LoginFailure.objects.filter(username=_account(username)).delete()
