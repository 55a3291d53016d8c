"""Strict parsing of settings read from the environment.

Every reader raises :class:`ImproperlyConfigured` naming the variable when its
value is malformed, so a typo stops start-up with a message instead of being
silently replaced by a default.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

from openprogram.providers.pricing import parse_price_overrides
from openprogram.security.urls import parse_allow_entry

__all__ = [
    "env_allow_hosts",
    "env_bool",
    "env_database",
    "env_int",
    "env_list",
    "env_model_prices",
    "env_path",
    "env_str",
]

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(
        f"{name}={raw!r} is not a boolean; use one of 1/0, true/false, yes/no, on/off"
    )


def env_int(
    name: str, default: int, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} is below the minimum {minimum}")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name}={value} is above the maximum {maximum}")
    return value


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw.strip())
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} is below the minimum {minimum}")
    return value


def env_list(name: str, default: list[str] | None = None) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return list(default or [])
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_allow_hosts(name: str) -> list[str]:
    """A comma-separated list of ``host``, ``host:port`` or ``[v6]:port`` entries."""
    entries = env_list(name)
    for entry in entries:
        try:
            parse_allow_entry(entry)
        except ValueError as exc:
            raise ImproperlyConfigured(f"{name}: {exc}") from None
    return entries


def env_model_prices(name: str) -> dict:
    """A JSON object of per-model prices (USD per million tokens); see providers/pricing.py."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return {}
    try:
        return parse_price_overrides(json.loads(raw))
    except (ValueError, TypeError) as exc:
        raise ImproperlyConfigured(f"{name} is not a valid price table: {exc}") from None


def env_path(name: str, default: Path) -> Path:
    raw = os.environ.get(name, "").strip()
    path = Path(raw).expanduser() if raw else default
    return path.resolve()


def env_database(name: str, default_sqlite: Path) -> dict:
    """Return a Django DATABASES entry from a URL, or the SQLite default.

    Accepted: ``postgres://user:pass@host:port/db`` (also ``postgresql://``) and
    ``sqlite:///absolute/path.sqlite3``.
    """
    raw = os.environ.get(name, "").strip()
    if not raw:
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": str(default_sqlite)}
    parts = urlsplit(raw)
    if parts.scheme in {"postgres", "postgresql"}:
        if not parts.path.strip("/"):
            raise ImproperlyConfigured(f"{name} has no database name: {raw!r}")
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parts.path.lstrip("/")),
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(parts.port or ""),
            "CONN_MAX_AGE": 0,
        }
    if parts.scheme == "sqlite":
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": parts.path or str(default_sqlite)}
    raise ImproperlyConfigured(f"{name}={raw!r}: only postgres:// and sqlite:// URLs are supported")
