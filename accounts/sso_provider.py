"""The provider's discovery document: where its endpoints are, fetched when first needed.

Fetched from ``<OIDC_ISSUER>/.well-known/openid-configuration`` (OpenID Connect Discovery
4) at the first sign-on, not at start-up, so the site starts while the provider is down;
kept for an hour. The document must name exactly the configured issuer (Discovery 4.3):
a document that names another is refused, and so is one missing an endpoint we use.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import requests
from django.conf import settings

from accounts.sso_errors import SsoUnavailable

__all__ = ["provider_metadata", "provider_metadata_forget"]

_MAX_AGE_SECONDS = 3600
_REQUIRED = ("authorization_endpoint", "token_endpoint", "jwks_uri", "userinfo_endpoint")
_lock = threading.Lock()
_cache: dict[str, tuple[float, dict[str, Any]]] = {}


def provider_metadata() -> dict[str, Any]:
    """The configured issuer's discovery document; raises SsoUnavailable if unusable."""
    issuer = settings.OIDC_ISSUER
    with _lock:
        cached = _cache.get(issuer)
    if cached and time.monotonic() - cached[0] < _MAX_AGE_SECONDS:
        return cached[1]
    url = issuer.rstrip("/") + "/.well-known/openid-configuration"
    try:
        response = requests.get(url, timeout=settings.OIDC_TIMEOUT)
        response.raise_for_status()
        metadata = response.json()
    except (requests.RequestException, ValueError) as exc:
        raise SsoUnavailable(f"its discovery document could not be read ({exc})") from exc
    if not isinstance(metadata, dict) or metadata.get("issuer") != issuer:
        raise SsoUnavailable(f"its discovery document does not name the issuer {issuer!r}")
    missing = [key for key in _REQUIRED if not isinstance(metadata.get(key), str)]
    if missing:
        raise SsoUnavailable(f"its discovery document has no {', '.join(missing)}")
    with _lock:
        _cache[issuer] = (time.monotonic(), metadata)
    return metadata


def provider_metadata_forget() -> None:
    """Fetch the document again at the next use (tests, or after a provider change)."""
    with _lock:
        _cache.clear()
