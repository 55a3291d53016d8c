"""A socket's login: its session and user read in the database batch thread.

Channels' ``AuthMiddleware`` reads the session and the user through its own database
thread (``database_sync_to_async``): one more thread hop per connect, two event-loop
wake-ups and a connection check before and after, paid by every socket. Here the same
read (Channels' own ``get_user``, so the session hash is verified exactly as Django's
login does) joins the running turns' batch (``chat_app.db_batch``): a burst of connects
shares one hop with the turns' history writes.
"""

from __future__ import annotations

from typing import Any

from channels.auth import AuthMiddleware, get_user
from channels.sessions import CookieMiddleware, SessionMiddleware

from chat_app.db_batch import run_batched

__all__ = ["BatchedAuthMiddleware", "batched_auth_middleware_stack"]

_user_from_session = get_user.func
"""Channels' ``get_user`` without its ``database_sync_to_async`` wrapper."""


def _scope_user(*, scope: dict[str, Any]) -> Any:
    return _user_from_session(scope)


class BatchedAuthMiddleware(AuthMiddleware):
    """``scope["user"]`` as Channels' ``AuthMiddleware`` sets it, read in the batch thread."""

    async def resolve_scope(self, scope: dict[str, Any]) -> None:
        scope["user"]._wrapped = await run_batched(_scope_user, scope=scope)


def batched_auth_middleware_stack(inner: Any) -> Any:
    """Channels' ``AuthMiddlewareStack`` (cookies, session, user) with the batched login."""
    return CookieMiddleware(SessionMiddleware(BatchedAuthMiddleware(inner)))
