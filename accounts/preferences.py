"""A user's preferences: theme and the model new chats start with (read and write).

The profile new chats start with is the active tool profile, kept by ``tools_app``;
the account page sets it through ``tools_app.services.profile_activate``.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser

from accounts.models import UserPreferences
from core.api_errors import UnprocessableError

__all__ = [
    "Preferences",
    "preferences_get",
    "preferences_update",
    "preferred_model",
    "preferred_theme",
]

Theme = UserPreferences.Theme


@dataclass(frozen=True)
class Preferences:
    theme: str
    default_model: str
    """Empty: the server's default model."""


def preferences_get(*, user: AbstractBaseUser) -> Preferences:
    row = UserPreferences.objects.filter(user=user).first()
    if row is None:
        return Preferences(theme=Theme.SYSTEM, default_model="")
    return Preferences(theme=row.theme, default_model=row.default_model)


def preferred_theme(*, user: AbstractBaseUser) -> str:
    """``light``, ``dark`` or ``system`` (anonymous visitors: ``system``)."""
    if not user.is_authenticated:
        return Theme.SYSTEM
    return preferences_get(user=user).theme


def preferred_model(*, user: AbstractBaseUser) -> str:
    """The model a new chat of ``user`` starts with: theirs while still offered, else the server's."""
    chosen = preferences_get(user=user).default_model
    return chosen if chosen in settings.OPENPROGRAM_MODELS else settings.OPENPROGRAM_DEFAULT_MODEL


def preferences_update(*, user: AbstractBaseUser, theme: str, default_model: str) -> Preferences:
    """Store both choices; an unknown theme or a model the server does not offer is a 422."""
    if theme not in Theme.values:
        raise UnprocessableError(f"Theme {theme[:20]!r} is not one of: {', '.join(Theme.values)}.")
    if default_model and default_model not in settings.OPENPROGRAM_MODELS:
        raise UnprocessableError(f"Model {default_model[:200]!r} is not offered by this server.")
    UserPreferences.objects.update_or_create(
        user=user, defaults={"theme": theme, "default_model": default_model}
    )
    return Preferences(theme=theme, default_model=default_model)
