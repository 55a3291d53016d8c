"""OAuth client credentials: a server used by this deployment's own identity, not a user's.

For a service account an operator registered with the provider: the token
comes from the ``client_credentials`` grant, authenticated with a client secret
(``client_secret_basic`` / ``client_secret_post``) or a signed JWT assertion
(``private_key_jwt``, RFC 7523). Same checks as the user flow
(:class:`openprogram.mcp.oauth.Guarded`). Name the provider's ``issuer``: the
credentials are then only ever sent to that authorization server, whatever the
MCP server's metadata says; without it, the MCP server chooses where they go.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Literal

import httpx2
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)

from openprogram.mcp.oauth import Guarded, OAuthStore

__all__ = ["MCPMachineClient", "machine_auth"]


@dataclass(frozen=True)
class MCPMachineClient:
    """A pre-registered confidential client: ``client_secret`` or ``private_key_pem``, not both."""

    client_id: str
    client_secret: str | None = None
    private_key_pem: str | None = None
    signing_algorithm: str = "ES256"
    token_endpoint_auth: Literal["client_secret_basic", "client_secret_post"] = (
        "client_secret_basic"
    )
    scope: str | None = None
    issuer: str | None = None

    def __post_init__(self) -> None:
        if not self.client_id:
            raise ValueError("a machine client needs its client_id")
        if bool(self.client_secret) == bool(self.private_key_pem):
            raise ValueError("give exactly one of client_secret and private_key_pem")


class _GuardedClientCredentials(Guarded, ClientCredentialsOAuthProvider):
    """client_secret_basic / client_secret_post, held to the guards."""


class _GuardedPrivateKeyJWT(Guarded, PrivateKeyJWTOAuthProvider):
    """private_key_jwt, held to the guards."""


def machine_auth(server_url: str, client: MCPMachineClient, store: OAuthStore) -> httpx2.Auth:
    """A signer for ``server_url`` that fetches tokens with ``client``'s own credentials."""
    with warnings.catch_warnings():
        # The SDK warns when no issuer is named; the module doc says what that means.
        warnings.simplefilter("ignore")
        if client.private_key_pem:
            assertion = SignedJWTParameters(
                issuer=client.client_id,
                subject=client.client_id,
                signing_key=client.private_key_pem,
                signing_algorithm=client.signing_algorithm,
            ).create_assertion_provider()
            return _GuardedPrivateKeyJWT(
                server_url=server_url,
                storage=store,
                client_id=client.client_id,
                assertion_provider=assertion,
                scope=client.scope,
                issuer=client.issuer,
            )
        return _GuardedClientCredentials(
            server_url=server_url,
            storage=store,
            client_id=client.client_id,
            client_secret=client.client_secret or "",
            token_endpoint_auth_method=client.token_endpoint_auth,
            scope=client.scope,
            issuer=client.issuer,
        )
