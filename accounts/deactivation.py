"""A deactivated account keeps no way back in: its sessions, API tokens and login links go.

While an account is inactive nothing of it works anyway (the session check, the token
check and the login backends all read ``is_active``). What this adds is the other half:
when an admin reactivates the account — perhaps months later, for another reason — none of
the credentials it had come back to life: no browser that kept the cookie, no script with
the old token, no login link sent before. The person signs in afresh and makes new tokens.

Contract:

1. ``pre_save`` of the user model notes a deactivation: the stored row is active and the
   instance being saved is not (a save with ``update_fields`` not naming ``is_active`` is
   left alone);
2. ``post_save`` then deletes, in the same transaction as the save: every session row that
   logs the user in (each deletion also closes that session's sockets with 4401, through
   :mod:`accounts.session_revocation`), every API token of the user, and every unused
   login link;
3. reactivating restores none of them.

Not covered: ``QuerySet.update(is_active=False)`` sends no signal; the account is inactive
(so locked out) all the same, but its rows stay until something else removes them.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.db.models.signals import post_save, pre_save
from django.dispatch import receiver
from django.utils import timezone

from accounts.models import ApiToken, LoginToken

__all__ = ["credentials_revoke"]

_DEACTIVATED = "_deactivation_pending"
_SCAN_CHUNK = 2000


def credentials_revoke(*, user_id: int) -> tuple[int, int, int]:
    """Delete the user's live sessions, API tokens and unused login links (step 2);
    ``(sessions, tokens, links)`` deleted. Sessions do not index their user, so the live
    ones are decoded in chunks (a deactivation is rare)."""
    wanted = str(user_id)
    keys = []
    live = Session.objects.filter(expire_date__gt=timezone.now())
    for session in live.iterator(chunk_size=_SCAN_CHUNK):
        try:
            owner = session.get_decoded().get("_auth_user_id")
        except Exception:  # undecodable data logs nobody in
            continue
        if str(owner) == wanted:
            keys.append(session.session_key)
    sessions = 0
    for start in range(0, len(keys), _SCAN_CHUNK):
        # QuerySet.delete sends post_delete per row: each session's sockets close.
        sessions += Session.objects.filter(pk__in=keys[start : start + _SCAN_CHUNK]).delete()[0]
    tokens = ApiToken.objects.filter(user_id=user_id).delete()[0]
    links = LoginToken.objects.filter(user_id=user_id, used_at__isnull=True).delete()[0]
    return sessions, tokens, links


@receiver(pre_save, dispatch_uid="deactivation.user_pre_save")
def _on_user_pre_save(sender, instance, raw=False, update_fields=None, **kwargs) -> None:
    if raw or sender is not get_user_model() or instance.pk is None or instance.is_active:
        return
    if update_fields is not None and "is_active" not in update_fields:
        return
    was_active = sender.objects.filter(pk=instance.pk).values_list("is_active", flat=True).first()
    if was_active:
        instance.__dict__[_DEACTIVATED] = True


@receiver(post_save, dispatch_uid="deactivation.user_post_save")
def _on_user_post_save(sender, instance, raw=False, **kwargs) -> None:
    if raw or sender is not get_user_model():
        return
    if instance.__dict__.pop(_DEACTIVATED, False):
        credentials_revoke(user_id=instance.pk)
