"""Per-user MCP accounts: connect (OAuth in the browser), callback, disconnect, resume.

A server marked ``per_user_auth`` is not connected by the shared manager: each
user's own session lives in the framework's :class:`openprogram.mcp.MCPAccounts`,
signed with that user's tokens, which are kept in :class:`AccountTokenStore`
(one ``MCPAccount`` row, sealed with a key derived from ``SECRET_KEY``). The
tools are offered to a user only while their own connection is ready; the
layer-4 reason otherwise says "connect your account".
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

import httpx2
from asgiref.sync import async_to_sync
from django.contrib.auth.models import AbstractBaseUser
from django.db import close_old_connections
from django.utils import timezone
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import ValidationError

from core.api_errors import UnprocessableError
from openprogram.mcp import get_mcp_accounts
from openprogram.mcp.oauth import MCPOAuthClient, MCPOAuthError, oauth_auth
from openprogram.mcp.oauth_handoff import finish_authorization, oauth_auth_handing_off
from openprogram.mcp.oauth_revocation import revocation_endpoint_of, revoke_tokens
from tools_app.mcp.account_models import MCPAccount
from tools_app.mcp.account_sync import mcp_account_connecting
from tools_app.mcp.models import MCPServer
from tools_app.mcp.oauth_flows import ConsentRequest, mcp_oauth_flow_take, needs_the_user
from tools_app.mcp.token_crypto import TokenSealError, seal, unseal

__all__ = [
    "AccountTokenStore",
    "Disconnected",
    "mcp_account_callback",
    "mcp_account_connect_start",
    "mcp_account_disconnect",
    "mcp_account_resume",
]

logger = logging.getLogger(__name__)

CONNECT_WAIT_SECONDS = 20.0
"""How long Connect and the callback wait for the server before answering the browser."""
_POLL_SECONDS = 0.05
_UNUSED_REDIRECT = "http://127.0.0.1/mcp-oauth-callback"
"""A resumed connection never redirects anyone (its authorizer refuses); this fills the slot."""


class AccountTokenStore:
    """The framework's ``OAuthStore`` over one ``MCPAccount`` row, sealed at rest.

    Called on the accounts loop; every database touch runs in a worker thread.
    A seal that no key opens reads as nothing stored: the user connects again.
    """

    def __init__(self, *, user_id: int, server_id: int) -> None:
        self.user_id = user_id
        self.server_id = server_id

    def _read(self, column: str) -> dict[str, Any] | None:
        try:
            sealed = (
                MCPAccount.objects.filter(user_id=self.user_id, server_id=self.server_id)
                .values_list(column, flat=True)
                .first()
            )
            return unseal(sealed) if sealed else None
        except TokenSealError:
            logger.warning("MCP account of user %s: stored %s unreadable", self.user_id, column)
            return None
        finally:
            close_old_connections()

    def _write(self, column: str, value: dict[str, Any]) -> None:
        try:
            updates: dict[str, Any] = {column: seal(value)}
            if column == "sealed_tokens":
                updates["connected"] = timezone.now()
            MCPAccount.objects.update_or_create(
                user_id=self.user_id, server_id=self.server_id, defaults=updates
            )
        finally:
            close_old_connections()

    async def get_tokens(self) -> OAuthToken | None:
        value = await asyncio.to_thread(self._read, "sealed_tokens")
        try:
            return OAuthToken.model_validate(value) if value else None
        except ValidationError:
            return None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        await asyncio.to_thread(self._write, "sealed_tokens", tokens.model_dump(mode="json"))

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        value = await asyncio.to_thread(self._read, "sealed_client")
        try:
            return OAuthClientInformationFull.model_validate(value) if value else None
        except ValidationError:
            return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        value = client_info.model_dump(mode="json", exclude_none=True)
        await asyncio.to_thread(self._write, "sealed_client", value)


def _oauth_client(server: MCPServer, redirect_uri: str) -> MCPOAuthClient:
    try:
        return MCPOAuthClient(
            redirect_uri=redirect_uri,
            client_name="OpenProgram",
            client_id=server.oauth_client_id or None,
            client_secret=server.oauth_client_secret or None,
            scope=server.oauth_scope or None,
        )
    except ValueError as exc:
        raise UnprocessableError(f"MCP server {server.name!r}: {exc}") from exc


def _signer(server: MCPServer, user_id: int, redirect_uri: str) -> httpx2.Auth:
    """The signer of a session that runs on stored tokens: nobody is at a browser for it."""
    store = AccountTokenStore(user_id=user_id, server_id=server.pk)
    return oauth_auth(server.url, _oauth_client(server, redirect_uri), store, needs_the_user)


def _per_user_server(server: MCPServer) -> None:
    if not server.per_user_auth or server.transport != MCPServer.Transport.HTTP:
        raise UnprocessableError(f"MCP server {server.name!r} does not use per-user accounts")
    if not server.enabled:
        raise UnprocessableError(f"MCP server {server.name!r} is disabled")
    if server.name not in get_mcp_accounts().names():
        raise UnprocessableError(f"MCP server {server.name!r} is not running")


def mcp_account_connect_start(
    *, user: AbstractBaseUser, server: MCPServer, redirect_uri: str
) -> str | None:
    """Start connecting ``user``'s account; the provider URL to send the browser to.

    ``None`` means no consent was needed (stored tokens were still good) and the
    account is connected. UnprocessableError says why it could not start. The
    flow itself is stored (``MCPOAuthFlow``): the callback may reach any process.
    """
    _per_user_server(server)
    consent = ConsentRequest(user_id=user.pk, server_id=server.pk)
    store = AccountTokenStore(user_id=user.pk, server_id=server.pk)
    signer = oauth_auth_handing_off(
        server.url, _oauth_client(server, redirect_uri), store, consent.hand_off
    )
    accounts = get_mcp_accounts()
    with mcp_account_connecting(name=server.name, user=str(user.pk)):
        accounts.connect(server.name, user.pk, signer)
        # The URL appears on the accounts loop; the connection may also settle without
        # one (stored tokens still good, or a refusal): look at both, briefly, until one shows.
        deadline = time.monotonic() + CONNECT_WAIT_SECONDS
        while not consent.url_ready.wait(_POLL_SECONDS):
            status = accounts.status(server.name, user.pk)
            if status["state"] == "ready":
                return None
            if status["state"] == "failed":
                accounts.disconnect(server.name, user.pk)
                raise UnprocessableError(f"Could not connect to {server.name!r}: {status['error']}")
            if time.monotonic() > deadline:
                accounts.disconnect(server.name, user.pk)
                raise UnprocessableError(f"MCP server {server.name!r} did not answer in time")
        # The attempt waits at the consent step; the callback's process finishes the flow.
        accounts.disconnect(server.name, user.pk).result(CONNECT_WAIT_SECONDS)
        return consent.url


def mcp_account_callback(
    *, user: AbstractBaseUser, state: str, code: str, iss: str | None, error: str | None
) -> tuple[str, dict[str, Any]]:
    """Finish ``user``'s flow named by ``state``, in this process; ``(server, status)``.

    Raises FlowNotFound (and its FlowExpired / FlowUsed) or FlowOfAnotherUser
    (the view answers 400 / 403). The code is traded for tokens here, the
    tokens are stored sealed, and this process connects the user's session.
    """
    taken = mcp_oauth_flow_take(user_id=user.pk, state=state)
    server, pending = taken.server, taken.pending
    try:
        if error:
            raise MCPOAuthError(f"the provider did not authorize the connection ({error})")
        if not code:
            raise MCPOAuthError("the provider sent no authorization code")
        tokens = async_to_sync(finish_authorization)(pending, code=code, iss=iss)
        _per_user_server(server)
    except (MCPOAuthError, UnprocessableError) as exc:
        message = exc.message if isinstance(exc, UnprocessableError) else str(exc)
        _forget(user, server)
        return server.name, {"state": "failed", "error": message}
    revocation = revocation_endpoint_of(pending)
    MCPAccount.objects.update_or_create(
        user=user,
        server=server,
        defaults={
            "sealed_tokens": seal(tokens.model_dump(mode="json")),
            "sealed_client": seal(pending.client.model_dump(mode="json", exclude_none=True)),
            "revocation_endpoint": revocation or "",
            "connected": timezone.now(),
        },
    )
    accounts = get_mcp_accounts()
    accounts.connect(server.name, user.pk, _signer(server, user.pk, pending.redirect_uri))
    try:
        status = accounts.wait_for(
            server.name,
            user.pk,
            lambda s: s["state"] in ("ready", "failed"),
            timeout=CONNECT_WAIT_SECONDS,
        )
    except TimeoutError:
        status = accounts.status(server.name, user.pk)
    if status["state"] == "failed":
        _forget(user, server)
    return server.name, status


def _forget(user: AbstractBaseUser, server: MCPServer) -> None:
    """Nothing half-done stays behind: no session and no tokens for this user."""
    accounts = get_mcp_accounts()
    if server.name in accounts.names():
        accounts.disconnect(server.name, user.pk)
    MCPAccount.objects.filter(user=user, server=server).delete()


@dataclass(frozen=True)
class Disconnected:
    """What Disconnect did: whether anything was stored, and what the provider said."""

    had_account: bool
    revocation_problems: tuple[str, ...] = ()


def mcp_account_disconnect(*, user: AbstractBaseUser, server: MCPServer) -> Disconnected:
    """Revoke ``user``'s tokens at the provider (RFC 7009), forget them, close their session.

    The local tokens are deleted whatever the provider answers (or if it does not
    answer within :data:`~openprogram.mcp.oauth_revocation.REVOKE_SECONDS`); its
    problems come back as sentences for a note.
    """
    account = MCPAccount.objects.filter(user=user, server=server).first()
    problems: list[str] = []
    if account is not None:
        problems = _revoke(account)
        account.delete()
    accounts = get_mcp_accounts()
    if server.name in accounts.names():
        accounts.disconnect(server.name, user.pk)
    return Disconnected(had_account=account is not None, revocation_problems=tuple(problems))


def _revoke(account: MCPAccount) -> list[str]:
    if not account.revocation_endpoint or not account.sealed_tokens:
        return []
    try:
        tokens = OAuthToken.model_validate(unseal(account.sealed_tokens))
        client = OAuthClientInformationFull.model_validate(unseal(account.sealed_client or ""))
    except (TokenSealError, ValidationError):
        return ["the stored tokens could not be read, so they were not revoked at the provider"]
    return async_to_sync(revoke_tokens)(
        endpoint=account.revocation_endpoint, tokens=tokens, client=client
    )


def mcp_account_resume(*, server: MCPServer, user_id: int) -> None:
    """(Re)connect ``user_id``'s session to ``server`` with the stored tokens (refreshed if due)."""
    get_mcp_accounts().connect(server.name, user_id, _signer(server, user_id, _UNUSED_REDIRECT))
