"""OAuth client credentials: a server used by this deployment's own identity, not a user's.

For a service account an operator registered with the provider: the token
comes from the ``client_credentials`` grant, authenticated with a client secret
(``client_secret_basic`` / ``client_secret_post``) or a signed JWT assertion
(``private_key_jwt``, RFC 7523); or, for a workload whose platform vouches for
it (Kubernetes, a CI runner, a cloud VM: workload identity federation, SEP-1933),
from the RFC 7523 ``jwt-bearer`` grant with that platform's identity token as
the assertion, minted for the authorization server's issuer. Same checks as the user flow
(:class:`openprogram.mcp.oauth.Guarded`). Name the provider's ``issuer``: the
credentials are then only ever sent to that authorization server, whatever the
MCP server's metadata says; without it, the MCP server chooses where they go.
"""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

import httpx2
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from mcp.shared.auth import JWT_BEARER_GRANT_TYPE

from openprogram.mcp.oauth import Guarded, MCPOAuthError
from openprogram.mcp.oauth_stores import OAuthStore

__all__ = ["MCPMachineClient", "WorkloadToken", "machine_auth"]

WorkloadToken = Callable[[str], Awaitable[str]]
"""Returns the workload's identity token (a JWT) for the given audience (the AS's issuer)."""


@dataclass(frozen=True)
class MCPMachineClient:
    """A pre-registered client: exactly one of ``client_secret``, ``private_key_pem``, ``workload_token``."""

    client_id: str
    client_secret: str | None = None
    private_key_pem: str | None = None
    signing_algorithm: str = "ES256"
    token_endpoint_auth: Literal["client_secret_basic", "client_secret_post"] = (
        "client_secret_basic"
    )
    scope: str | None = None
    issuer: str | None = None
    workload_token: WorkloadToken | None = None

    def __post_init__(self) -> None:
        if not self.client_id:
            raise ValueError("a machine client needs its client_id")
        given = [
            bool(self.client_secret),
            bool(self.private_key_pem),
            self.workload_token is not None,
        ]
        if given.count(True) != 1:
            raise ValueError("give exactly one of client_secret, private_key_pem, workload_token")


class _GuardedClientCredentials(Guarded, ClientCredentialsOAuthProvider):
    """client_secret_basic / client_secret_post, held to the guards."""


class _GuardedPrivateKeyJWT(Guarded, PrivateKeyJWTOAuthProvider):
    """private_key_jwt, held to the guards."""


class _GuardedWorkloadIdentity(Guarded, ClientCredentialsOAuthProvider):
    """The jwt-bearer grant with the workload's identity token, held to the guards.

    A public client (no secret): the assertion is the credential. A refused
    grant fails the connection with the provider's error; it is never retried
    with another grant.
    """

    workload_token: WorkloadToken

    async def _exchange_token_client_credentials(self) -> httpx2.Request:
        issuer = self._issuer
        metadata = self.context.oauth_metadata
        if metadata is None or (
            issuer is not None and str(metadata.issuer).rstrip("/") != issuer.rstrip("/")
        ):
            raise MCPOAuthError(
                f"no metadata from the authorization server {issuer or ''} to send the "
                "workload's identity token to; refused"
            )
        client = self.context.client_info
        data = {
            "grant_type": JWT_BEARER_GRANT_TYPE,
            "assertion": await self.workload_token(str(metadata.issuer)),
            "client_id": client.client_id if client is not None else "",
        }
        if self.context.should_include_resource_param(self.context.protocol_version):
            data["resource"] = self.context.get_resource_url()
        if self.context.client_metadata.scope:
            data["scope"] = self.context.client_metadata.scope
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        return httpx2.Request("POST", self._get_token_endpoint(), data=data, headers=headers)


def machine_auth(server_url: str, client: MCPMachineClient, store: OAuthStore) -> httpx2.Auth:
    """A signer for ``server_url`` that fetches tokens with ``client``'s own credentials."""
    with warnings.catch_warnings():
        # The SDK warns when no issuer is named; the module doc says what that means.
        warnings.simplefilter("ignore")
        if client.workload_token is not None:
            provider = _GuardedWorkloadIdentity(
                server_url=server_url,
                storage=store,
                client_id=client.client_id,
                client_secret="",
                token_endpoint_auth_method="client_secret_post",
                scope=client.scope,
                issuer=client.issuer,
            )
            provider.workload_token = client.workload_token
            return provider
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
