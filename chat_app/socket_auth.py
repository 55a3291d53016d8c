"""A socket's login: its session and user read in the database batch thread.

Channels' ``AuthMiddleware`` reads the session and the user through its own database
thread (``database_sync_to_async``): one more thread hop per connect, two event-loop
wake-ups and a connection check before and after, paid by every socket. Here the same
read joins the running turns' batch (``chat_app.db_batch``): a burst of connects
shares one hop with the turns' history writes.

The session row is read first and the user after it (the user's id is inside the
session's signed data, so SQL cannot join them). The session's SELECT is a
``read_after_send`` job: on PostgreSQL it goes out in the batch's pipeline with the
turns' writes, and the user reads of all the batch's logins share one more. Everything after
the row is Django's and Channels' own checks, in their order: the session data is
decoded by the session store (its signature checked; a forged or corrupt one is an
empty session), and :func:`_session_user` is Channels' ``get_user``: the session's
backend must be a configured one, the backend's user must exist and be allowed to log
in (Django's ``ModelBackend.user_can_authenticate``: an inactive user is nobody), and
the session's auth hash must match the user's (a password change logs every socket
out; a mismatch flushes the session). Only ``ModelBackend``'s ORM read of Django's
``User`` is plain SQL here (the ORM's query building was ~180 µs of ~200 µs a login);
any other backend or user model is asked as is.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from channels.auth import AuthMiddleware
from channels.sessions import CookieMiddleware, SessionMiddleware
from django.conf import settings
from django.contrib.auth import (
    BACKEND_SESSION_KEY,
    HASH_SESSION_KEY,
    SESSION_KEY,
    get_user_model,
    load_backend,
)
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import AnonymousUser, User, UserManager
from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
from django.contrib.sessions.models import Session
from django.db import connection
from django.utils import timezone
from django.utils.crypto import constant_time_compare

from chat_app.db_batch import SendMore, read_after_send, run_batched
from chat_app.raw_sql import column, db_value, instance_from_row, table
from openprogram_site.db_sent import query_sent

__all__ = ["BatchedAuthMiddleware", "batched_auth_middleware_stack", "socket_user_sent"]


@read_after_send
def socket_user_sent(*, scope: dict[str, Any]) -> Callable[[], Any]:
    """Send the SELECT of the socket's session row; the returned function decodes it as
    the session store's ``load()`` does and gives the session's user
    (:func:`_session_user`; ``AnonymousUser`` when there is none)."""
    store = scope["session"]._wrapped
    key = store.session_key  # None when the cookie is missing or not a valid key
    if type(store) is not DatabaseSessionStore or key is None:
        # Another session engine (cache, signed cookies) or nothing to look up: as is.
        return lambda: _session_user(scope["session"])

    def user(cursor: Any) -> Any:
        row = cursor.fetchone()
        # What SessionStore.load() leaves behind: no row (unknown or expired) is an
        # empty session without a key; the data is decoded and its signature checked.
        if row is None:
            store._session_key = None
            store._session_cache = {}
        else:
            store._session_cache = store.decode(row[0])
        return _session_user(scope["session"])

    expires = db_value(Session, "expire_date", timezone.now())
    return query_sent(_session_sql(), [key, expires], user)


def _session_user(session: Any) -> Any:
    """The session's user, or ``AnonymousUser``: Channels' ``get_user`` (channels/auth.py),
    step for step. ``ModelBackend``'s read of Django's ``User`` is plain SQL returned as
    :class:`~chat_app.db_batch.SendMore`: a batch sends all its logins' user reads in
    one pipeline, and each is checked once read."""
    try:
        user_id = get_user_model()._meta.pk.to_python(session[SESSION_KEY])
        backend_path = session[BACKEND_SESSION_KEY]
    except KeyError:
        return AnonymousUser()
    if backend_path not in settings.AUTHENTICATION_BACKENDS:
        return AnonymousUser()
    backend = load_backend(backend_path)
    if not (type(backend) is ModelBackend and _plain_user_model()):
        return _verified(session, backend.get_user(user_id))

    def send() -> Callable[[], Any]:
        row = _user_row_sent(user_id)

        def checked() -> Any:
            user = row()
            allowed = user is not None and backend.user_can_authenticate(user)
            return _verified(session, user if allowed else None)

        return checked

    return SendMore(send)


def _verified(session: Any, user: Any) -> Any:
    """``user`` if the session's auth hash matches it (else the session is flushed)."""
    if hasattr(user, "get_session_auth_hash"):
        session_hash = session.get(HASH_SESSION_KEY)
        verified = session_hash and constant_time_compare(
            session_hash, user.get_session_auth_hash()
        )
        if not verified:
            session.flush()
            return AnonymousUser()
    return user or AnonymousUser()


def _plain_user_model() -> bool:
    """Django's own ``User`` behind its own manager: ``ModelBackend.get_user``'s
    ``_default_manager.get(pk=…)`` is then exactly :func:`_user_row_sent`."""
    model = get_user_model()
    return model is User and type(model._default_manager) is UserManager


def _user_row_sent(user_id: Any) -> Callable[[], User | None]:
    """Send the SELECT of the user's row; the returned function reads it (None if none)."""

    def user(cursor: Any) -> User | None:
        row = cursor.fetchone()
        return None if row is None else instance_from_row(User, User._meta.concrete_fields, row)

    return query_sent(_user_sql(), [user_id], user)


@cache
def _user_sql() -> str:
    columns = ", ".join(connection.ops.quote_name(f.column) for f in User._meta.concrete_fields)
    return f"SELECT {columns} FROM {table(User)} WHERE {column(User, 'id')} = %s"


@cache
def _session_sql() -> str:
    return (
        f"SELECT {column(Session, 'session_data')} FROM {table(Session)} "
        f"WHERE {column(Session, 'session_key')} = %s AND {column(Session, 'expire_date')} > %s"
    )


class BatchedAuthMiddleware(AuthMiddleware):
    """``scope["user"]`` as Channels' ``AuthMiddleware`` sets it, read in the batch thread."""

    async def resolve_scope(self, scope: dict[str, Any]) -> None:
        scope["user"]._wrapped = await run_batched(socket_user_sent, scope=scope)


def batched_auth_middleware_stack(inner: Any) -> Any:
    """Channels' ``AuthMiddlewareStack`` (cookies, session, user) with the batched login."""
    return CookieMiddleware(SessionMiddleware(BatchedAuthMiddleware(inner)))
