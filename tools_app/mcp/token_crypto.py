"""Sealing MCP OAuth tokens at rest, with a key derived from the deployment's SECRET_KEY.

Fernet (AES-128-CBC + HMAC-SHA256) under a key HKDF-derived from ``SECRET_KEY``
for this one purpose, so the raw secret is never the key and no other use of it
can produce this key. Keys from ``SECRET_KEY_FALLBACKS`` still open old seals,
so rotating the secret does not disconnect everyone; a seal no key opens reads
as "not connected" (the user connects again), never as an error page.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

__all__ = ["TokenSealError", "seal", "unseal"]

_INFO = b"openprogram:mcp-oauth-tokens:v1"


class TokenSealError(ValueError):
    """A sealed value no current or fallback key opens (or not a seal at all)."""


def _fernet(secret: str) -> Fernet:
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_INFO).derive(secret.encode())
    return Fernet(base64.urlsafe_b64encode(key))


def _keys() -> MultiFernet:
    secrets = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]
    return MultiFernet([_fernet(secret) for secret in secrets])


def seal(value: dict[str, Any]) -> str:
    return _keys().encrypt(json.dumps(value, sort_keys=True).encode()).decode()


def unseal(sealed: str) -> dict[str, Any]:
    try:
        value = json.loads(_keys().decrypt(sealed.encode()))
    except (InvalidToken, ValueError) as exc:
        raise TokenSealError("the stored MCP authorization cannot be opened") from exc
    if not isinstance(value, dict):
        raise TokenSealError("the stored MCP authorization is not an object")
    return value
