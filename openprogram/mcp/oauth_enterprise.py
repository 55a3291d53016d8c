"""Enterprise-managed authorization (SEP-990): an IdP's ID token instead of a consent page.

Where people sign in through an enterprise identity provider, the IdP can vouch
for them to an MCP server's authorization server: the client exchanges the
user's ID token at the IdP for an ID-JAG (RFC 8693 token exchange), then the
ID-JAG for an access token (RFC 7523 jwt-bearer grant, as a confidential
client). The authorization server's ``issuer`` is configuration, never taken from
the MCP server, so neither the ID-JAG nor the client secret can be steered
elsewhere. The web app does not use this yet: it has no enterprise sign-in whose
ID token it could present.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

import httpx2
from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider

from openprogram.mcp.oauth import MCPOAuthError
from openprogram.mcp.oauth_stores import OAuthStore

__all__ = ["MCPEnterpriseClient", "enterprise_auth"]

_TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
_ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
_ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"


@dataclass(frozen=True)
class MCPEnterpriseClient:
    """This client at the MCP authorization server (``issuer``) and at the user's IdP."""

    client_id: str
    client_secret: str
    issuer: str
    idp_token_endpoint: str
    idp_client_id: str
    token_endpoint_auth: Literal["client_secret_basic", "client_secret_post"] = (
        "client_secret_basic"
    )
    scope: str | None = None

    def __post_init__(self) -> None:
        if not (self.client_id and self.client_secret and self.issuer):
            raise ValueError("an enterprise client needs client_id, client_secret and issuer")


def enterprise_auth(
    server_url: str,
    client: MCPEnterpriseClient,
    store: OAuthStore,
    id_token: Callable[[], Awaitable[str]],
) -> httpx2.Auth:
    """A signer for ``server_url`` acting for the user whose IdP ID token ``id_token`` gives."""

    async def id_jag(audience: str, resource: str) -> str:
        form = {
            "grant_type": _TOKEN_EXCHANGE,
            "requested_token_type": _ID_JAG,
            "audience": audience,
            "resource": resource,
            "subject_token": await id_token(),
            "subject_token_type": _ID_TOKEN,
            "client_id": client.idp_client_id,
        }
        async with httpx2.AsyncClient(timeout=30.0, follow_redirects=False) as http:
            response = await http.post(client.idp_token_endpoint, data=form)
        if response.status_code != 200:
            raise MCPOAuthError(
                f"the identity provider refused the token exchange ({response.status_code})"
            )
        token = response.json().get("access_token")
        if not isinstance(token, str) or not token:
            raise MCPOAuthError("the identity provider's token exchange returned no ID-JAG")
        return token

    return IdentityAssertionOAuthProvider(
        server_url=server_url,
        storage=store,
        client_id=client.client_id,
        client_secret=client.client_secret,
        issuer=client.issuer,
        assertion_provider=id_jag,
        scope=client.scope,
        token_endpoint_auth_method=client.token_endpoint_auth,
    )
