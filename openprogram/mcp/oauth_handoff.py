"""Authorizations that any process can finish: the browser may come back to another one.

The SDK's provider keeps an authorization's PKCE verifier in a local variable
and waits, in the process that started it, for the code. A web application
with several processes cannot count on the provider's callback reaching that
process, so :func:`oauth_auth_handing_off` gives a signer that, when the user's
consent is needed, builds the authorization request itself and hands everything
needed to finish it to the host as a :class:`PendingAuthorization` (the web app
seals it into its database). Whichever process receives the callback finishes
it with :func:`finish_authorization` (code + verifier → tokens at the token
endpoint), stores the tokens, and connects with them like any stored account.

The signer is the same guarded provider as :func:`openprogram.mcp.oauth.oauth_auth`
(discovery, issuer/resource checks, registration, https-only endpoints, at most
:data:`~openprogram.mcp.oauth.MAX_AUTHORIZATIONS` consent rounds); only the
consent step differs.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urljoin

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.oauth2 import OAuthContext, PKCEParameters
from mcp.client.auth.utils import validate_authorization_response_iss
from mcp.shared.auth import (
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
)
from pydantic import AnyUrl, ValidationError

from openprogram.mcp.oauth import Guarded, MCPOAuthClient, MCPOAuthError
from openprogram.mcp.oauth_stores import OAuthStore, PreRegisteredStore

__all__ = [
    "HandOff",
    "PendingAuthorization",
    "client_authenticated",
    "finish_authorization",
    "oauth_auth_handing_off",
]

TOKEN_REQUEST_SECONDS = 15.0
_ANY = AnyUrl("http://127.0.0.1/")
"""Fills a required field of a context whose redirect URIs are never read."""


@dataclass(frozen=True)
class PendingAuthorization:
    """One consent in progress: where the browser goes, and what finishing it takes.

    ``code_verifier`` and the client's secret (in ``client``) are secrets: keep
    the whole thing sealed at rest, and only until the callback or its expiry.
    """

    url: str
    """The provider's authorization URL to send the browser to."""
    state: str
    code_verifier: str
    redirect_uri: str
    token_endpoint: str
    client: OAuthClientInformationFull
    resource: str | None = None
    scope: str | None = None
    metadata: OAuthMetadata | None = None
    """The authorization server's metadata (its issuer checks the callback's ``iss``)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "state": self.state,
            "code_verifier": self.code_verifier,
            "redirect_uri": self.redirect_uri,
            "token_endpoint": self.token_endpoint,
            "client": self.client.model_dump(mode="json", exclude_none=True),
            "resource": self.resource,
            "scope": self.scope,
            "metadata": (
                self.metadata.model_dump(mode="json", exclude_none=True) if self.metadata else None
            ),
        }

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> PendingAuthorization:
        """Rebuild a stored one; ValueError when it is not one this module wrote."""
        try:
            metadata = value.get("metadata")
            return cls(
                url=str(value["url"]),
                state=str(value["state"]),
                code_verifier=str(value["code_verifier"]),
                redirect_uri=str(value["redirect_uri"]),
                token_endpoint=str(value["token_endpoint"]),
                client=OAuthClientInformationFull.model_validate(value["client"]),
                resource=value.get("resource"),
                scope=value.get("scope"),
                metadata=OAuthMetadata.model_validate(metadata) if metadata else None,
            )
        except (KeyError, TypeError, ValidationError) as exc:
            raise ValueError(f"not a stored authorization: {exc}") from exc


HandOff = Callable[[PendingAuthorization], Awaitable[None]]
"""Keeps a :class:`PendingAuthorization` and sends the user to its URL.

It may wait (the web app's waits until its connection attempt is stopped);
when it returns, this connection attempt ends with "continues in the browser".
"""


class _HandingOffProvider(Guarded, OAuthClientProvider):
    """The guarded provider whose consent step hands the authorization to the host."""

    hand_off: HandOff

    async def _perform_authorization_code_grant(self) -> tuple[str, str]:
        # Mirrors the SDK's request (PKCE S256, state, RFC 8707 resource, scope, OIDC
        # prompt=consent for offline_access), but keeps the verifier where the host can
        # store it instead of in this coroutine's locals.
        context = self.context
        if context.client_info is None or not context.client_metadata.redirect_uris:
            raise MCPOAuthError("no client registration to ask for consent with")
        metadata = context.oauth_metadata
        if metadata is not None and metadata.authorization_endpoint:
            endpoint = str(metadata.authorization_endpoint)
        else:
            base = context.get_authorization_base_url(context.server_url)
            endpoint = urljoin(base, "/authorize")
        pkce = PKCEParameters.generate()
        state = secrets.token_urlsafe(32)
        redirect_uri = str(context.client_metadata.redirect_uris[0])
        resource = (
            context.get_resource_url()
            if context.should_include_resource_param(context.protocol_version)
            else None
        )
        scope = context.client_metadata.scope
        params = {
            "response_type": "code",
            "client_id": context.client_info.client_id,
            "redirect_uri": redirect_uri,
            "state": state,
            "code_challenge": pkce.code_challenge,
            "code_challenge_method": "S256",
        }
        if resource:
            params["resource"] = resource
        if scope:
            params["scope"] = scope
            if "offline_access" in scope.split():
                params["prompt"] = "consent"
        await self.hand_off(
            PendingAuthorization(
                url=f"{endpoint}?{urlencode(params)}",
                state=state,
                code_verifier=pkce.code_verifier,
                redirect_uri=redirect_uri,
                token_endpoint=self._get_token_endpoint(),
                client=context.client_info,
                resource=resource,
                scope=scope,
                metadata=metadata,
            )
        )
        raise MCPOAuthError("the authorization continues in the browser")


def oauth_auth_handing_off(
    server_url: str, client: MCPOAuthClient, store: OAuthStore, hand_off: HandOff
) -> httpx2.Auth:
    """Like :func:`~openprogram.mcp.oauth.oauth_auth`, but consent is handed to ``hand_off``."""
    registration = client.registration()
    provider = _HandingOffProvider(
        server_url=server_url,
        client_metadata=client.metadata(),
        storage=PreRegisteredStore(store, registration) if registration else store,
        client_metadata_url=client.client_metadata_url,
    )
    provider.fixed_scope = client.scope
    provider.hand_off = hand_off
    return provider


def client_authenticated(
    data: dict[str, str], client: OAuthClientInformationFull
) -> tuple[dict[str, str], dict[str, str]]:
    """``data`` and headers for a request to the token or revocation endpoint, as ``client``.

    The SDK's own rules (``client_secret_basic`` / ``_post`` / none), so every
    endpoint sees the client the way the token endpoint did.
    """
    context = OAuthContext(
        server_url="",
        client_metadata=OAuthClientMetadata(redirect_uris=client.redirect_uris or [_ANY]),
        storage=None,  # type: ignore[arg-type]  # only the client record is read
        redirect_handler=None,
        callback_handler=None,
        client_info=client,
    )
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    return context.prepare_token_auth({**data, "client_id": client.client_id}, headers)


async def finish_authorization(
    pending: PendingAuthorization,
    *,
    code: str,
    iss: str | None,
    timeout: float = TOKEN_REQUEST_SECONDS,
) -> OAuthToken:
    """Trade the callback's ``code`` for tokens; MCPOAuthError says why it could not.

    ``iss`` (RFC 9207) must name the issuer the request went to. The token
    endpoint is asked once, following no redirect.
    """
    try:
        validate_authorization_response_iss(iss, pending.metadata)
    except Exception as exc:  # the SDK raises its OAuthFlowError
        raise MCPOAuthError(str(exc)) from exc
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": pending.redirect_uri,
        "code_verifier": pending.code_verifier,
    }
    if pending.resource:
        data["resource"] = pending.resource
    data, headers = client_authenticated(data, pending.client)
    try:
        async with httpx2.AsyncClient(follow_redirects=False, timeout=timeout) as http:
            response = await http.post(pending.token_endpoint, data=data, headers=headers)
    except httpx2.HTTPError as exc:
        raise MCPOAuthError(f"the token endpoint could not be reached: {exc}") from exc
    if response.status_code not in (200, 201):
        detail = response.text[:300].strip()
        raise MCPOAuthError(f"the token request failed ({response.status_code}): {detail}")
    try:
        tokens = OAuthToken.model_validate_json(response.content)
    except ValidationError as exc:
        raise MCPOAuthError(
            "the token endpoint answered with something that is not a token"
        ) from exc
    if tokens.scope is None:
        # RFC 6749 §5.1: no scope in the answer means the requested one was granted.
        tokens.scope = pending.scope
    return tokens
