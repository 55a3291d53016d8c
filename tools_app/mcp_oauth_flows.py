"""Authorizations in progress: the browser is at the provider, a connection waits for it.

Starting "Connect" runs the framework's OAuth flow on the accounts loop; when it
needs the user's consent it calls :meth:`AuthorizationFlow.authorize` with the
provider's URL. That parks the flow under its ``state`` until the callback view
hands the answer back (:func:`authorization_answer`), checked against the user
who started it. A flow is answered once and waits at most :data:`FLOW_SECONDS`.

Flows live in this process's memory: the callback must reach the process that
started the flow (a single server process, or sticky sessions; see docs/mcp.md).
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlparse

from mcp.shared.auth import AuthorizationCodeResult

from openprogram.mcp.oauth import MCPOAuthError

__all__ = [
    "FLOW_SECONDS",
    "AuthorizationFlow",
    "FlowNotFound",
    "FlowOfAnotherUser",
    "authorization_answer",
    "needs_the_user",
]

FLOW_SECONDS = 600.0
"""How long a started authorization waits for the user to come back."""

_pending: dict[str, AuthorizationFlow] = {}
_lock = threading.Lock()


class FlowNotFound(LookupError):
    """No authorization in progress has this state (expired, answered, or made up)."""


class FlowOfAnotherUser(PermissionError):
    """The state belongs to an authorization another user started."""


async def needs_the_user(url: str) -> AuthorizationCodeResult:
    """The authorizer of a connection nobody is watching: it cannot ask, so it says what to do."""
    raise MCPOAuthError("the server needs your consent again: connect your account again")


@dataclass
class AuthorizationFlow:
    """One user's "Connect" for one server, from the click until the callback."""

    user_id: int
    server: str
    url: str | None = None
    url_ready: threading.Event = field(default_factory=threading.Event)
    _asked: bool = False
    _answer: asyncio.Future[AuthorizationCodeResult] | None = None
    _loop: asyncio.AbstractEventLoop | None = None
    _expires: float = 0.0

    async def authorize(self, url: str) -> AuthorizationCodeResult:
        """Park until the callback answers; only the first request is sent to the browser.

        A later request on the same connection (a step-up during a chat call)
        has nobody at the browser, so it fails with what to do instead of waiting.
        """
        if self._asked:
            return await needs_the_user(url)
        self._asked = True
        state = parse_qs(urlparse(url).query).get("state", [""])[0]
        self._loop = asyncio.get_running_loop()
        self._answer = self._loop.create_future()
        self.url = url
        with _lock:
            _prune()
            _pending[state] = self
            self._expires = time.monotonic() + FLOW_SECONDS
        self.url_ready.set()
        try:
            return await asyncio.wait_for(self._answer, FLOW_SECONDS)
        except TimeoutError:
            raise MCPOAuthError(
                "the authorization was not finished in time: connect your account again"
            ) from None
        finally:
            with _lock:
                if _pending.get(state) is self:
                    del _pending[state]

    def _deliver(self, result: AuthorizationCodeResult | None, error: str | None) -> None:
        def settle() -> None:
            if self._answer is None or self._answer.done():
                return
            if error is not None:
                self._answer.set_exception(MCPOAuthError(error))
            else:
                self._answer.set_result(result)  # type: ignore[arg-type]

        if self._loop is not None:
            self._loop.call_soon_threadsafe(settle)


def _prune() -> None:
    now = time.monotonic()
    for state, flow in list(_pending.items()):
        if flow._expires < now:
            del _pending[state]


def authorization_answer(
    *, user_id: int, state: str, code: str, iss: str | None, error: str | None
) -> AuthorizationFlow:
    """Hand the provider's answer to the flow ``state`` names, if ``user_id`` started it."""
    with _lock:
        flow = _pending.get(state) if state else None
        if flow is None:
            raise FlowNotFound("this authorization is unknown or has expired: connect again")
        if flow.user_id != user_id:
            # Not consumed: another user's request must not be able to cancel the real flow.
            raise FlowOfAnotherUser("this authorization was started by another user")
        del _pending[state]
    if error:
        flow._deliver(None, f"the provider did not authorize the connection ({error})")
    elif not code:
        flow._deliver(None, "the provider sent no authorization code")
    else:
        flow._deliver(AuthorizationCodeResult(code=code, state=state, iss=iss or None), None)
    return flow
