"""OAuth 2.1 for remote MCP servers: who we are to an authorization server, and the signer.

:func:`oauth_auth` gives an ``httpx2.Auth`` that an HTTP :class:`ServerConnection`
signs every request with (``MCPManager(auth_for=...)``). It is the SDK's
``OAuthClientProvider`` (discovery of protected-resource and authorization-server
metadata with every fallback, Client ID Metadata Documents, dynamic registration,
PKCE S256, scopes from ``WWW-Authenticate`` or ``scopes_supported``, step-up on
``insufficient_scope``, refresh, RFC 8707 ``resource``), held to this module's
stricter rules because an MCP server's metadata is untrusted input:

- the protected-resource metadata must name this server (``resource``); the
  authorization-server metadata must name the issuer it was fetched for (SDK),
  except that a 2025-03-26 server's own metadata may name an issuer under a
  path of its origin when all it names is on that origin (:mod:`.oauth_legacy`);
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
:class:`~openprogram.mcp.oauth_stores.OAuthStore` (the web app's is per user and
encrypted); which URLs are acceptable is :mod:`.oauth_urls`'s to say.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urljoin, urlparse

import httpx2
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.client.auth.utils import create_oauth_metadata_request
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
)
from pydantic import AnyUrl

from openprogram.mcp.oauth_dpop import DPoPHooks
from openprogram.mcp.oauth_legacy import (
    LegacyMetadataRefused,
    legacy_issuer_alias,
    legacy_metadata_url,
    resource_metadata_not_found,
)
from openprogram.mcp.oauth_stores import OAuthStore, PreRegisteredStore
from openprogram.mcp.oauth_urls import origin_of, secure_url

logger = logging.getLogger(__name__)

__all__ = [
    "MAX_AUTHORIZATIONS",
    "Authorize",
    "MCPOAuthClient",
    "MCPOAuthError",
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
        if not secure_url(self.redirect_uri):
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


class Guarded(DPoPHooks):
    """The checks the SDK's providers leave to the application (see module doc), and DPoP.

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
                if outgoing is request and response.status_code < 400:
                    self.refreshed_after_401 = False
                if outgoing is not request and response.is_redirect:
                    target = urljoin(str(outgoing.url), response.headers.get("location", ""))
                    if origin_of(target) != origin_of(str(outgoing.url)):
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

    legacy_issuer: str | None = None
    """On the 2025-03-26 path: the same-origin issuer the origin's metadata names (or None)."""

    def _expected_issuer(self) -> str:
        if self.context.auth_server_url is None and self.legacy_issuer is not None:
            return self.legacy_issuer
        return super()._expected_issuer()

    async def _auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        # The SDK fixes the issuer it expects before it reads the 2025-03-26 metadata. So
        # when protected-resource discovery has just found nothing, read that document
        # first, decide which issuer it may name (oauth_legacy), and hand the SDK this
        # same response when it asks for the URL: one request, and what the SDK holds
        # is exactly what the server said.
        flow = super()._auth_flow(request)
        challenge: httpx2.Response | None = None
        read_ahead: tuple[httpx2.URL, httpx2.Response] | None = None
        try:
            outgoing = await flow.__anext__()
            while True:
                if read_ahead is not None and outgoing.url == read_ahead[0]:
                    response, read_ahead = read_ahead[1], None
                else:
                    response = yield outgoing
                if outgoing is request:
                    challenge = response
                elif challenge is not None and await resource_metadata_not_found(
                    outgoing, response, challenge, self.context.server_url
                ):
                    url = legacy_metadata_url(self.context.server_url)
                    document = yield create_oauth_metadata_request(url)
                    await document.aread()
                    read_ahead = (httpx2.URL(url), document)
                    try:
                        self.legacy_issuer = legacy_issuer_alias(self.context.server_url, document)
                    except LegacyMetadataRefused as exc:
                        raise MCPOAuthError(str(exc)) from None
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()

    def _select_authorization_server(self, advertised: list[str]) -> str:
        chosen = super()._select_authorization_server(advertised)
        if not secure_url(chosen):
            raise MCPOAuthError(
                f"the MCP server names an authorization server that is not https: {chosen!r}"
            )
        return chosen

    refreshing = False
    """The token request in flight is a refresh standing in for a new authorization."""
    refreshed_after_401 = False
    """A 401 was already answered with a refresh and no request has succeeded since."""

    def _refresh_will_do(self) -> bool:
        """Whether a 401 can be answered with the stored refresh token instead of consent.

        After a restart the SDK loads stored tokens without their expiry, sends the
        expired access token, gets a 401 and would ask for consent again, which a
        per-user account cannot give unattended. A refresh is enough when the scope
        to ask for was already granted (or was never recorded); once per run of 401s,
        so a provider that keeps refusing the refreshed token still gets a real
        authorization next.
        """
        tokens = self.context.current_tokens
        if tokens is None or not tokens.refresh_token or self.refreshed_after_401:
            return False
        if self.context.client_info is None:
            return False
        wanted = set((self.context.client_metadata.scope or "").split())
        return tokens.scope is None or wanted <= set(tokens.scope.split())

    async def _handle_token_response(self, response: httpx2.Response) -> None:
        if not self.refreshing:
            await super()._handle_token_response(response)
            return
        self.refreshing = False
        if not await self._handle_refresh_response(response):
            raise MCPOAuthError(
                f"the provider refused to refresh the stored token (HTTP "
                f"{response.status_code}): connect your account again"
            )

    async def _perform_authorization(self) -> httpx2.Request:
        self._check_endpoints()
        if self.fixed_scope:
            self.context.client_metadata.scope = self.fixed_scope
        if self._refresh_will_do():
            self.refreshed_after_401 = self.refreshing = True
            return await self._refresh_token()
        self.authorizations += 1
        if self.authorizations > MAX_AUTHORIZATIONS:
            raise MCPOAuthError(
                f"the server still refuses after {MAX_AUTHORIZATIONS} authorizations; "
                "giving up instead of asking the user again"
            )
        return await super()._perform_authorization()

    def _check_endpoints(self) -> None:
        metadata = self.context.oauth_metadata
        if metadata is not None:
            for label in ("authorization_endpoint", "token_endpoint", "registration_endpoint"):
                endpoint = getattr(metadata, label)
                if endpoint is not None and not secure_url(str(endpoint)):
                    raise MCPOAuthError(
                        f"the authorization server's {label} is not https: {str(endpoint)!r}"
                    )


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
        storage=PreRegisteredStore(store, registration) if registration else store,
        redirect_handler=redirect,
        callback_handler=callback,
        client_metadata_url=client.client_metadata_url,
    )
    provider.fixed_scope = client.scope
    return provider
