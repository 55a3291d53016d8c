"""Telling the provider that tokens are no longer wanted (RFC 7009 token revocation).

When a user disconnects, forgetting the tokens here is not the whole job: they
stay valid at the provider until they expire (a refresh token often never does).
:func:`revoke_tokens` asks the authorization server's ``revocation_endpoint``
to revoke the refresh token, then the access token. It never raises: the caller
deletes its copy whatever the provider says, and gets the problems back as
sentences to log and show.

The endpoint is named by metadata (untrusted), so :func:`revocation_endpoint_of`
accepts it only on the origin of the token endpoint that issued the tokens:
tokens never travel to a host that did not already hold them.
"""

from __future__ import annotations

import logging
import time
from urllib.parse import urlparse

import httpx2
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from openprogram.mcp.oauth_handoff import PendingAuthorization, client_authenticated
from openprogram.mcp.oauth_urls import origin_of, secure_url

__all__ = ["REVOKE_SECONDS", "revocation_endpoint_of", "revoke_tokens"]

logger = logging.getLogger(__name__)

REVOKE_SECONDS = 5.0
"""The whole revocation (both tokens) may take this long: Disconnect must stay quick."""


def revocation_endpoint_of(pending: PendingAuthorization) -> str | None:
    """The RFC 7009 endpoint to revoke this authorization's tokens at, if a usable one.

    Only on the token endpoint's own origin, and https (http on loopback).
    """
    endpoint = pending.metadata.revocation_endpoint if pending.metadata else None
    if endpoint is None:
        return None
    endpoint = str(endpoint)
    if origin_of(endpoint) != origin_of(pending.token_endpoint) or not secure_url(endpoint):
        logger.warning(
            "MCP OAuth: revocation endpoint %s ignored (not https on the token endpoint's host %s)",
            endpoint,
            pending.token_endpoint,
        )
        return None
    return endpoint


async def revoke_tokens(
    *,
    endpoint: str,
    tokens: OAuthToken,
    client: OAuthClientInformationFull,
    timeout: float = REVOKE_SECONDS,
) -> list[str]:
    """Revoke ``tokens`` at ``endpoint`` as ``client``; what went wrong (empty: all revoked).

    The endpoint comes from the server's metadata (untrusted), so it must be
    ``https`` (``http`` only on loopback) and no redirect is followed: a token is
    never sent anywhere else.
    """
    host = urlparse(endpoint).hostname or endpoint
    if not secure_url(endpoint):
        return [f"the provider's revocation endpoint is not https ({endpoint!r}); not sent"]
    wanted = [
        (token, hint)
        for token, hint in (
            (tokens.refresh_token, "refresh_token"),
            (tokens.access_token, "access_token"),
        )
        if token
    ]
    problems: list[str] = []
    deadline = time.monotonic() + timeout
    async with httpx2.AsyncClient(follow_redirects=False) as http:
        for token, hint in wanted:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                problems.append(f"{host} did not answer in time; the {hint} was not revoked")
                break
            data, headers = client_authenticated({"token": token, "token_type_hint": hint}, client)
            try:
                response = await http.post(endpoint, data=data, headers=headers, timeout=remaining)
            except httpx2.TimeoutException:
                problems.append(f"{host} did not answer in time; the {hint} was not revoked")
                break
            except httpx2.HTTPError as exc:
                problems.append(f"{host} could not be reached ({type(exc).__name__})")
                break
            # RFC 7009 §2.2: 200 also for a token the server no longer knows.
            if response.status_code != 200:
                problems.append(f"{host} refused to revoke the {hint} ({response.status_code})")
    for problem in problems:
        logger.warning("MCP token revocation: %s", problem)
    return problems
