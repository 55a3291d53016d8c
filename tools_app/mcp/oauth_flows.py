"""Authorizations in progress, kept in the database so any web process can finish them.

Connect runs the framework's OAuth discovery and registration on the accounts
loop; when the user's consent is needed the signer hands over a
:class:`~openprogram.mcp.oauth_handoff.PendingAuthorization` (state, PKCE
verifier, token endpoint, client registration, resource, scope) and
:meth:`ConsentRequest.hand_off` stores it as an ``MCPOAuthFlow`` row, sealed,
found by the SHA-256 of its ``state``. The provider's callback may then reach
any process: :func:`mcp_oauth_flow_take` finds the row, checks it belongs to
the user whose browser brought the callback, that it has not expired and was
not used, and marks it used (at most once, whatever races it) before anyone
trades the code for tokens.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from dataclasses import dataclass, field
from datetime import timedelta

from django.db import close_old_connections
from django.utils import timezone
from mcp.shared.auth import AuthorizationCodeResult

from openprogram.mcp.oauth import MCPOAuthError
from openprogram.mcp.oauth_handoff import PendingAuthorization
from tools_app.mcp.account_models import MCPOAuthFlow
from tools_app.mcp.models import MCPServer
from tools_app.mcp.token_crypto import TokenSealError, seal, unseal

__all__ = [
    "FLOW_SECONDS",
    "ConsentRequest",
    "FlowExpired",
    "FlowNotFound",
    "FlowOfAnotherUser",
    "FlowUsed",
    "TakenFlow",
    "mcp_oauth_flow_store",
    "mcp_oauth_flow_take",
    "needs_the_user",
]

FLOW_SECONDS = 600
"""How long a started authorization waits for the user to come back."""


class FlowNotFound(LookupError):
    """No authorization in progress has this state (made up, or long gone): 400."""


class FlowExpired(FlowNotFound):
    """The authorization was started more than :data:`FLOW_SECONDS` ago: 400."""


class FlowUsed(FlowNotFound):
    """The callback for this authorization already came (a replay): 400."""


class FlowOfAnotherUser(PermissionError):
    """The state belongs to an authorization another user started: 403."""


async def needs_the_user(url: str) -> AuthorizationCodeResult:
    """The authorizer of a connection nobody is watching: it cannot ask, so it says what to do."""
    raise MCPOAuthError("the server needs your consent again: connect your account again")


def _digest(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()


def mcp_oauth_flow_store(*, user_id: int, server_id: int, pending: PendingAuthorization) -> None:
    """Keep ``pending`` (sealed) for :data:`FLOW_SECONDS`; expired flows are cleaned up."""
    now = timezone.now()
    MCPOAuthFlow.objects.filter(expires__lt=now).delete()
    MCPOAuthFlow.objects.create(
        state_digest=_digest(pending.state),
        user_id=user_id,
        server_id=server_id,
        sealed_pending=seal(pending.to_json()),
        expires=now + timedelta(seconds=FLOW_SECONDS),
    )


@dataclass(frozen=True)
class TakenFlow:
    server: MCPServer
    pending: PendingAuthorization


def mcp_oauth_flow_take(*, user_id: int, state: str) -> TakenFlow:
    """The flow ``state`` names, if ``user_id`` started it, now used up.

    Raises FlowNotFound (unknown), FlowExpired (deleted now), FlowUsed (a
    replay) or FlowOfAnotherUser (left as it was: another user's request must
    not be able to spoil the real flow).
    """
    now = timezone.now()
    row = (
        MCPOAuthFlow.objects.select_related("server").filter(state_digest=_digest(state)).first()
        if state
        else None
    )
    if row is None:
        raise FlowNotFound("this authorization is unknown or has expired: connect again")
    if row.user_id != user_id:
        raise FlowOfAnotherUser("this authorization was started by another user")
    if row.expires < now:
        row.delete()
        MCPOAuthFlow.objects.filter(expires__lt=now).delete()
        raise FlowExpired(
            f"this authorization expired (it must be finished within {FLOW_SECONDS // 60} "
            "minutes): connect again"
        )
    # Used at most once, even when two callbacks race: only one of them flips `used`.
    claimed = MCPOAuthFlow.objects.filter(pk=row.pk, used__isnull=True).update(
        used=now, sealed_pending=""
    )
    if not claimed:
        raise FlowUsed("this authorization was already used: connect again if you need to")
    try:
        pending = PendingAuthorization.from_json(unseal(row.sealed_pending))
    except (TokenSealError, ValueError) as exc:
        raise FlowNotFound(f"this authorization cannot be read ({exc}): connect again") from exc
    return TakenFlow(server=row.server, pending=pending)


@dataclass
class ConsentRequest:
    """One user's Connect, from the click until the provider's URL is known.

    :meth:`hand_off` is the signer's consent step: it stores the flow and
    parks the connection attempt, which Connect then stops (the callback
    finishes the flow, in whichever process it reaches).
    """

    user_id: int
    server_id: int
    url: str | None = None
    url_ready: threading.Event = field(default_factory=threading.Event)
    _asked: bool = False

    async def hand_off(self, pending: PendingAuthorization) -> None:
        if self._asked:
            # A second consent round on the same attempt (a step-up) has nobody to ask.
            await needs_the_user(pending.url)
        self._asked = True
        await asyncio.to_thread(self._store, pending)
        self.url = pending.url
        self.url_ready.set()
        await asyncio.Event().wait()  # until Connect stops this attempt

    def _store(self, pending: PendingAuthorization) -> None:
        try:
            mcp_oauth_flow_store(user_id=self.user_id, server_id=self.server_id, pending=pending)
        finally:
            close_old_connections()
