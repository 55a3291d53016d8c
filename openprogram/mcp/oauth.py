"""OAuth 2.1 for remote MCP servers: who we are to an authorization server, and the signer.

:func:`oauth_auth` gives an ``httpx2.Auth`` that an HTTP :class:`ServerConnection`
signs every request with (``MCPManager(auth_for=...)``). It is the SDK's
``OAuthClientProvider`` (discovery of protected-resource and authorization-server
metadata with every fallback, Client ID Metadata Documents, dynamic registration,
PKCE S256, scopes from ``WWW-Authenticate`` or ``scopes_supported``, step-up on
``insufficient_scope``, refresh, RFC 8707 ``resource``), held to this module's
stricter rules because an MCP server's metadata is untrusted input:

- the protected-resource metadata must name this server (``resource``); the
  authorization-server metadata must name the issuer it was fetched for (SDK);
- no request made for OAuth follows a redirect to another origin: the SDK
  follows none, and this one fails with a message saying where it pointed;
- every authorization server and endpoint must be ``https`` (``http`` only on a
  loopback address, for local servers and tests);
- a step-up (403 ``insufficient_scope``) is attempted at most
  :data:`MAX_AUTHORIZATIONS` times per signer, so a server that never accepts
  any scope cannot loop the user through consent pages.

Where the user's consent comes from is the caller's: an :data:`Authorize`
coroutine gets the authorization URL and returns the callback's code and state
(the web app sends the browser there; the conformance client follows the
redirect headlessly). Tokens and client registrations live in an
:class:`OAuthStore` (the web app's is per user and encrypted).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Literal, Protocol
from urllib.parse import urljoin, urlparse

import httpx2
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl

logger = logging.getLogger(__name__)

__all__ = [
    "MAX_AUTHORIZATIONS",
    "Authorize",
    "MCPOAuthClient",
    "MCPOAuthError",
    "MemoryOAuthStore",
    "OAuthStore",
    "connect_deadline",
    "oauth_auth",
]

MAX_AUTHORIZATIONS = 3
"""Consent rounds one signer may start (the first plus step-ups) before it gives up."""

Authorize = Callable[[str], Awaitable[AuthorizationCodeResult]]
"""Sends the user to an authorization URL; returns the code, state (and iss) of the callback."""

TokenEndpointAuth = Literal["none", "client_secret_basic", "client_secret_post"]


class MCPOAuthError(OAuthFlowError):
    """An authorization server or its metadata that this client refuses to use."""


class OAuthStore(Protocol):
    """Where one user's tokens and client registration for one server are kept."""

    async def get_tokens(self) -> OAuthToken | None: ...

    async def set_tokens(self, tokens: OAuthToken) -> None: ...

    async def get_client_info(self) -> OAuthClientInformationFull | None: ...

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None: ...


class MemoryOAuthStore:
    """An :class:`OAuthStore` in memory: for one process's life (CLI, conformance, tests)."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


@dataclass(frozen=True)
class MCPOAuthClient:
    """How this application presents itself to an MCP server's authorization server.

    ``client_id`` set means a pre-registered client (with ``client_secret`` and
    ``token_endpoint_auth`` as the provider issued them); otherwise the client
    uses ``client_metadata_url`` as its id where the server supports Client ID
    Metadata Documents, and registers dynamically where it does not. ``scope``
    fixes the requested scope; by default it comes from the server's
    ``WWW-Authenticate`` challenge or its ``scopes_supported``.
    """

    redirect_uri: str
    client_name: str = "OpenProgram"
    client_metadata_url: str | None = None
    client_id: str | None = None
    client_secret: str | None = None
    token_endpoint_auth: TokenEndpointAuth | None = None
    scope: str | None = None

    def __post_init__(self) -> None:
        if not _secure_url(self.redirect_uri):
            raise ValueError(
                f"redirect_uri must be https (or http on a loopback address), "
                f"got {self.redirect_uri!r}"
            )
        url = self.client_metadata_url
        if url is not None and (urlparse(url).scheme != "https" or urlparse(url).path in ("", "/")):
            raise ValueError(f"client_metadata_url must be an https URL with a path, got {url!r}")
        if self.client_secret and not self.client_id:
            raise ValueError("client_secret needs the client_id it belongs to")

    def metadata(self) -> OAuthClientMetadata:
        """What dynamic registration sends (and a metadata document must say)."""
        return OAuthClientMetadata(
            redirect_uris=[AnyUrl(self.redirect_uri)],
            client_name=self.client_name,
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method=self.token_endpoint_auth or "none",
            scope=self.scope,
        )

    def registration(self) -> OAuthClientInformationFull | None:
        """The pre-registered client, when there is one."""
        if not self.client_id:
            return None
        method = self.token_endpoint_auth or (
            "client_secret_basic" if self.client_secret else "none"
        )
        return OAuthClientInformationFull(
            client_id=self.client_id,
            client_secret=self.client_secret,
            token_endpoint_auth_method=method,
            redirect_uris=[AnyUrl(self.redirect_uri)],
            grant_types=["authorization_code", "refresh_token"],
        )


_connect_deadline: ContextVar[asyncio.Timeout | None] = ContextVar(
    "openprogram_mcp_connect_deadline", default=None
)


@contextmanager
def connect_deadline(deadline: asyncio.Timeout) -> Iterator[None]:
    """Let an OAuth flow inside this block stop ``deadline`` while the user is at the provider.

    A connection's start is bounded by its timeout, which measures the server; the
    minutes a person spends on a consent page are not the server's.
    """
    token = _connect_deadline.set(deadline)
    try:
        yield
    finally:
        _connect_deadline.reset(token)


@contextmanager
def _person_time() -> Iterator[None]:
    deadline = _connect_deadline.get()
    when = deadline.when() if deadline is not None else None
    if deadline is None or when is None or deadline.expired():
        yield
        return
    loop = asyncio.get_running_loop()
    remaining = max(0.0, when - loop.time())
    try:
        deadline.reschedule(None)
    except RuntimeError:  # the block it bounded has ended: nothing to pause
        yield
        return
    try:
        yield
    finally:
        with suppress(RuntimeError):
            deadline.reschedule(loop.time() + remaining)


def _is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _origin(url: str) -> tuple[str, str, int | None]:
    parsed = urlparse(url)
    return parsed.scheme, (parsed.hostname or "").lower(), parsed.port


def _secure_url(url: str) -> bool:
    parsed = urlparse(url)
    return parsed.scheme == "https" or (parsed.scheme == "http" and _is_loopback(parsed.hostname))


class Guarded(OAuthClientProvider):
    """The checks the SDK's providers leave to the application (see module doc).

    Mixed in before an SDK provider class: ``class X(Guarded, SDKProvider)``.
    """

    authorizations = 0
    fixed_scope: str | None = None
    refusal: str | None = None
    """Why the last step-up could not be authorized (the call got the server's 403)."""

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        # The SDK follows a metadata/registration/token redirect only within its origin and
        # hands any other one to the flow, which then reads it as "not found" and falls back;
        # a redirect elsewhere is a server pointing us at another host: refuse, and say so.
        flow = super().async_auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                response = yield outgoing
                if outgoing is not request and response.is_redirect:
                    target = urljoin(str(outgoing.url), response.headers.get("location", ""))
                    if _origin(target) != _origin(str(outgoing.url)):
                        raise MCPOAuthError(
                            f"{outgoing.url} redirected to another host ({target}); refused"
                        )
                try:
                    outgoing = await flow.asend(response)
                except MCPOAuthError as exc:
                    if outgoing is not request or response.status_code != 403:
                        raise
                    # A step-up nobody can grant now: hand the 403 back so this one call
                    # fails and the session lives on (raising here would end the transport).
                    self.refusal = str(exc)
                    logger.warning("MCP server %s wants more scope: %s", request.url, exc)
                    return
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()

    def _select_authorization_server(self, advertised: list[str]) -> str:
        chosen = super()._select_authorization_server(advertised)
        if not _secure_url(chosen):
            raise MCPOAuthError(
                f"the MCP server names an authorization server that is not https: {chosen!r}"
            )
        return chosen

    async def _perform_authorization(self) -> httpx2.Request:
        self.authorizations += 1
        if self.authorizations > MAX_AUTHORIZATIONS:
            raise MCPOAuthError(
                f"the server still refuses after {MAX_AUTHORIZATIONS} authorizations; "
                "giving up instead of asking the user again"
            )
        metadata = self.context.oauth_metadata
        if metadata is not None:
            for label in ("authorization_endpoint", "token_endpoint", "registration_endpoint"):
                endpoint = getattr(metadata, label)
                if endpoint is not None and not _secure_url(str(endpoint)):
                    raise MCPOAuthError(
                        f"the authorization server's {label} is not https: {str(endpoint)!r}"
                    )
        if self.fixed_scope:
            self.context.client_metadata.scope = self.fixed_scope
        return await super()._perform_authorization()


class _GuardedOAuthProvider(Guarded, OAuthClientProvider):
    """Authorization code with PKCE, held to :class:`Guarded`'s checks."""


def oauth_auth(
    server_url: str,
    client: MCPOAuthClient,
    store: OAuthStore,
    authorize: Authorize,
) -> httpx2.Auth:
    """A signer for ``server_url``'s requests: tokens from ``store``, consent via ``authorize``.

    A pre-registered ``client`` is used as it is; the store then keeps only tokens.
    """
    pending: list[str] = []

    async def redirect(url: str) -> None:
        pending.append(url)

    async def callback() -> AuthorizationCodeResult:
        with _person_time():
            return await authorize(pending.pop())

    registration = client.registration()
    provider = _GuardedOAuthProvider(
        server_url=server_url,
        client_metadata=client.metadata(),
        storage=_PreRegisteredStore(store, registration) if registration else store,
        redirect_handler=redirect,
        callback_handler=callback,
        client_metadata_url=client.client_metadata_url,
    )
    provider.fixed_scope = client.scope
    return provider


class _PreRegisteredStore:
    """Always answers with the pre-registered client: the operator's settings are the truth."""

    def __init__(self, inner: OAuthStore, registration: OAuthClientInformationFull) -> None:
        self._inner = inner
        self._registration = registration

    async def get_tokens(self) -> OAuthToken | None:
        return await self._inner.get_tokens()

    async def set_tokens(self, tokens: OAuthToken) -> None:
        await self._inner.set_tokens(tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self._registration

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        await self._inner.set_client_info(client_info)
