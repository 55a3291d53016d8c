"""Who a provider's user is here, and which groups they are in.

The contract, step by step (``sso_account_resolve``):

1. The link claim's value (``OIDC_LINK_CLAIM``, ``sub`` by default) is the identity. A
   stored :class:`~accounts.models.SsoIdentity` with this issuer and value names the user:
   that user signs in, unless deactivated here.
2. Without one, a first sign-on. If ``OIDC_LINK_VERIFIED_EMAIL`` is on and the provider
   says ``email_verified`` is ``true`` (the JSON boolean), the one non-staff account with
   that e-mail address and no identity at this issuer is linked.
3. Otherwise, if any account here has that e-mail address, the sign-on is refused: the
   address is unverified (or linking by e-mail is off), and taking that account would be
   an account takeover; a second account with the same address would be a confusion.
4. Otherwise a new account is made. Its username comes from ``preferred_username`` (or
   the address) but never names an existing account: a taken name gets a number. A
   username is a label, never a key.

``sso_groups_sync`` then sets the user's managed groups (the values of
``OIDC_GROUP_MAP``) from the groups claim, at every sign-on; other groups are left alone.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, Group
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import SsoIdentity
from accounts.sso_errors import SsoRefused

__all__ = ["sso_account_resolve", "sso_groups_sync"]

logger = logging.getLogger(__name__)

_USERNAME_UNSAFE = re.compile(r"[^\w.@+-]")
_USERNAME_MAX = 150


def sso_account_resolve(*, issuer: str, claims: dict[str, Any]) -> AbstractBaseUser:
    """The account these verified claims sign in to; raises SsoRefused (see the module)."""
    subject = claims.get(settings.OIDC_LINK_CLAIM)
    if not isinstance(subject, str) or not subject:
        raise SsoRefused(
            f"The provider did not send the {settings.OIDC_LINK_CLAIM!r} claim this site "
            "links accounts on."
        )
    identity = SsoIdentity.objects.select_related("user").filter(issuer=issuer, subject=subject)
    found = identity.first()
    for attempt in range(2):
        if found is not None:
            break
        try:
            with transaction.atomic():
                found = _first_sign_on(issuer=issuer, subject=subject, claims=claims)
        except IntegrityError:
            # Another first sign-on at the same moment made this identity (or took the
            # username this one chose): look again, then choose again, once.
            found = identity.first()
            if found is None and attempt:
                raise
    user = found.user
    if not user.is_active:
        raise SsoRefused("This account is deactivated here. Ask an administrator.")
    SsoIdentity.objects.filter(pk=found.pk).update(last_login_at=timezone.now())
    return user


def _first_sign_on(*, issuer: str, subject: str, claims: dict[str, Any]) -> SsoIdentity:
    User = get_user_model()
    email = claims.get("email") if isinstance(claims.get("email"), str) else ""
    verified = claims.get("email_verified") is True
    same_email = User.objects.filter(email__iexact=email) if email else User.objects.none()
    if email and verified and settings.OIDC_LINK_VERIFIED_EMAIL:
        candidates = list(
            same_email.exclude(sso_identities__issuer=issuer).filter(is_staff=False)[:2]
        )
        if len(candidates) == 1:
            logger.info("single sign-on: %r linked by verified e-mail", candidates[0].username)
            return SsoIdentity.objects.create(user=candidates[0], issuer=issuer, subject=subject)
    if same_email.exists():
        raise SsoRefused(
            "An account with this e-mail address already exists here. It is not linked to "
            "your sign-on: an administrator can link it."
            + ("" if verified else " (The provider did not say the address is verified.)")
        )
    user = User.objects.create_user(
        _free_username(claims), email=email if verified else "", password=None
    )
    logger.info("single sign-on: account %r made for a first sign-on", user.username)
    return SsoIdentity.objects.create(user=user, issuer=issuer, subject=subject)


def _free_username(claims: dict[str, Any]) -> str:
    User = get_user_model()
    wanted = claims.get("preferred_username") or claims.get("email") or "user"
    base = _USERNAME_UNSAFE.sub("", str(wanted))[: _USERNAME_MAX - 8] or "user"
    name, number = base, 1
    while User.objects.filter(username__iexact=name).exists():
        number += 1
        name = f"{base}-{number}"
    return name


def sso_groups_sync(*, user: AbstractBaseUser, claims: dict[str, Any]) -> None:
    """Make the user's managed groups exactly those the groups claim maps to.

    A missing or malformed claim means no groups: a sign-on never keeps a group the
    provider no longer says. Nothing happens when no claim name or no mapping is set.
    """
    claim_name, mapping = settings.OIDC_GROUPS_CLAIM, settings.OIDC_GROUP_MAP
    if not (claim_name and mapping):
        return
    value = claims.get(claim_name)
    names = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    wanted = {mapping[name] for name in names if isinstance(name, str) and name in mapping}
    managed = set(mapping.values())
    with transaction.atomic():
        keep = list(user.groups.exclude(name__in=managed))
        add = [Group.objects.get_or_create(name=name)[0] for name in sorted(wanted)]
        user.groups.set(keep + add)
