"""Which URLs OAuth for MCP servers may use, and when two URLs share an origin.

An MCP server's metadata is untrusted input: every URL it names (authorization
server, endpoints, revocation) goes through these rules before anything is sent
there. Kept in one place so the signer, the hand-off and revocation agree.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlparse

__all__ = ["is_loopback_host", "origin_of", "origin_url", "secure_url"]

_DEFAULT_PORTS = {"http": 80, "https": 443}


def is_loopback_host(host: str | None) -> bool:
    """``localhost`` or a loopback IP address (where plain ``http`` is acceptable)."""
    if not host:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def secure_url(url: str) -> bool:
    """``https``, or ``http`` on a loopback address (local servers and tests)."""
    parsed = urlparse(url)
    return parsed.scheme == "https" or (
        parsed.scheme == "http" and is_loopback_host(parsed.hostname)
    )


def origin_of(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) with the scheme's default port filled in, for comparing origins."""
    parsed = urlparse(url)
    scheme = parsed.scheme.lower()
    return scheme, (parsed.hostname or "").lower(), parsed.port or _DEFAULT_PORTS.get(scheme)


def origin_url(url: str) -> str:
    """``url``'s origin written as a URL (``scheme://host``, the port only when not the default)."""
    scheme, host, port = origin_of(url)
    return (
        f"{scheme}://{host}" if port == _DEFAULT_PORTS.get(scheme) else f"{scheme}://{host}:{port}"
    )
