"""Why a single sign-on did not complete: each refusal has a sentence a person can act on."""

from __future__ import annotations

__all__ = ["SsoRefused", "SsoUnavailable"]


class SsoRefused(Exception):
    """The sign-on is refused (403): the message says why, for the person signing in."""


class SsoUnavailable(Exception):
    """The provider could not be reached or answered nonsense (502)."""
