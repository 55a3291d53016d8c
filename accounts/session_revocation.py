"""Sockets die with the login that opened them: per-user groups and the session re-check.

Every chat socket joins ``user.<id>`` (``user_group``). Whatever can end a login tells
that group to re-check, once the change is committed: a logout (``user_logged_out``), a
deleted session row (``Session`` ``post_delete``, which ``session.flush()`` and an admin
deleting the row both go through), a deactivation or a password change (no Django
signal: ``pre_save`` compares ``is_active`` and the password hash with the stored row).
Each socket then loads its own session afresh (``session_user``) and closes with 4401
if that no longer logs anyone in.

``update_session_auth_hash`` cycles the session key (the old row is deleted) when a
user changes their own password: ``session_rekeyed`` wraps it so the one message sent
carries the old key's digest and the new key, and the socket of that session adopts
the new key before it re-checks, so it stays open.

The group is named here; the channel layer carries it across processes (Redis).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from importlib import import_module
from typing import Any

from asgiref.sync import async_to_sync
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_out
from django.contrib.sessions.models import Session
from django.db import transaction
from django.db.models.signals import post_delete, post_save, pre_save
from django.dispatch import receiver

__all__ = [
    "SESSION_CHECK",
    "key_digest",
    "session_rekeyed",
    "session_user",
    "user_group",
]

SESSION_CHECK = "session.check"
# Set on a user by pre_save when is_active or the password hash changed; read by post_save.
_CHANGED = "_session_revocation_changed"

# Set while a view cycles its own session's key: user ids to tell once, at the end.
_deferred: ContextVar[set[int] | None] = ContextVar("session_revocation_deferred", default=None)


def user_group(user_id: int) -> str:
    return f"user.{user_id}"


def key_digest(session_key: str) -> str:
    """What the group hears of an old session key (never the key itself)."""
    return hashlib.sha256(session_key.encode()).hexdigest()


def _send(user_id: int, rekeyed: dict[str, str] | None = None) -> None:
    from channels.layers import get_channel_layer

    layer = get_channel_layer()
    if layer is None:
        return
    message: dict[str, Any] = {"type": SESSION_CHECK}
    if rekeyed:
        message["rekeyed"] = rekeyed
    async_to_sync(layer.group_send)(user_group(user_id), message)


def _tell(user_id: int | None) -> None:
    """After commit, ask ``user_id``'s sockets to re-check their sessions."""
    if user_id is None:
        return
    deferred = _deferred.get()
    if deferred is not None:
        deferred.add(user_id)
        return
    transaction.on_commit(lambda: _send(user_id))


@contextmanager
def session_rekeyed(request) -> Iterator[None]:
    """Wrap ``update_session_auth_hash(request, user)``: its socket follows the new key."""
    old_key = request.session.session_key
    token = _deferred.set(set())
    try:
        yield
        users = _deferred.get() or set()
    finally:
        _deferred.reset(token)
    new_key = request.session.session_key
    rekeyed = {key_digest(old_key): new_key} if old_key and new_key != old_key else None
    for user_id in users | {request.user.pk}:
        transaction.on_commit(lambda uid=user_id: _send(uid, rekeyed))


async def session_user(session_key: str | None):
    """The user ``session_key`` logs in now (loaded afresh), or None.

    Channels' own check: the session exists and is not expired, its backend is still
    configured and lets the user in, and its auth hash matches the user's password.
    """
    if not session_key:
        return None
    from channels.auth import get_user

    store = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
    user = await get_user({"session": store})
    return user if user.is_authenticated else None


def _session_user_id(session: Session) -> int | None:
    try:
        data = session.get_decoded()
    except Exception:  # undecodable data logs nobody in
        return None
    raw = data.get("_auth_user_id")
    try:
        return int(raw) if raw is not None else None
    except (TypeError, ValueError):
        return None


@receiver(user_logged_out, dispatch_uid="session_revocation.logged_out")
def _on_logout(sender, request, user, **kwargs) -> None:
    _tell(getattr(user, "pk", None))


@receiver(post_delete, sender=Session, dispatch_uid="session_revocation.session_deleted")
def _on_session_deleted(sender, instance: Session, **kwargs) -> None:
    _tell(_session_user_id(instance))


@receiver(pre_save, dispatch_uid="session_revocation.user_pre_save")
def _on_user_pre_save(sender, instance, raw=False, update_fields=None, **kwargs) -> None:
    if raw or sender is not get_user_model() or instance.pk is None:
        return
    if update_fields is not None and not {"is_active", "password"} & set(update_fields):
        return  # e.g. last_login at each login: nothing that ends a session
    stored = sender.objects.filter(pk=instance.pk).values("is_active", "password").first()
    instance.__dict__[_CHANGED] = stored is not None and (
        stored["is_active"] != instance.is_active or stored["password"] != instance.password
    )


@receiver(post_save, dispatch_uid="session_revocation.user_post_save")
def _on_user_post_save(sender, instance, raw=False, **kwargs) -> None:
    if raw or sender is not get_user_model():
        return
    if instance.__dict__.pop(_CHANGED, False):
        _tell(instance.pk)
