"""mozilla-django-oidc's backend, with the checks it leaves to us made strict.

The library exchanges the code (with PKCE) and fetches the user info; on its own it checks
the ID token's signature and nonce but not its issuer or audience. Here, step by step:

1. The backend only answers the callback view (``nonce`` and ``code_verifier`` are
   required keyword arguments, so a password login never reaches it).
2. A token endpoint error is a refusal naming the provider's error code (an expired or
   reused code is ``invalid_grant``).
3. The ID token must be signed with ``OIDC_SIGN_ALGO`` by a key from the provider's JWKS,
   name the configured issuer, list our client id in its audience (and be authorized to
   us when it lists others), be unexpired, and carry the nonce this browser's sign-on sent.
4. The user info must be about the ID token's ``sub`` (OpenID Connect Core 5.3.2).
5. ``accounts.sso_accounts`` decides the account and syncs its groups.

Every failure raises SsoRefused or SsoUnavailable, which the callback view shows as a page.
Sessions it makes are checked as the password backend's are (the user exists and is
active), so deactivating a user here ends their single sign-on sessions too.
"""

from __future__ import annotations

import logging
from typing import Any

import jwt
import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import SuspiciousOperation
from django.http import HttpRequest
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from accounts.sso_accounts import sso_account_resolve, sso_groups_sync
from accounts.sso_errors import SsoRefused, SsoUnavailable
from accounts.sso_provider import provider_metadata

__all__ = ["SsoBackend"]

logger = logging.getLogger(__name__)

_LEEWAY_SECONDS = 60


class SsoBackend(OIDCAuthenticationBackend):
    def __init__(self) -> None:
        # The library's __init__ reads the endpoints from settings; ours come from the
        # discovery document, when a sign-on needs them (the properties below).
        self.UserModel = get_user_model()
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        self.OIDC_RP_CLIENT_SECRET = settings.OIDC_RP_CLIENT_SECRET
        self.OIDC_RP_SIGN_ALGO = settings.OIDC_RP_SIGN_ALGO
        self.OIDC_RP_IDP_SIGN_KEY = None

    @property
    def OIDC_OP_TOKEN_ENDPOINT(self) -> str:
        return provider_metadata()["token_endpoint"]

    @property
    def OIDC_OP_USER_ENDPOINT(self) -> str:
        return provider_metadata()["userinfo_endpoint"]

    @property
    def OIDC_OP_JWKS_ENDPOINT(self) -> str:
        return provider_metadata()["jwks_uri"]

    def get_user(self, user_id: Any) -> Any:
        return ModelBackend.get_user(self, user_id)

    def authenticate(  # type: ignore[override]
        self, request: HttpRequest | None, *, nonce: str | None, code_verifier: str | None
    ) -> Any:
        if request is None or not nonce:
            return None
        try:
            return super().authenticate(request, nonce=nonce, code_verifier=code_verifier)
        except requests.RequestException as exc:
            raise SsoUnavailable(f"it did not answer ({type(exc).__name__})") from exc

    def raise_token_response_error(self, response: requests.Response) -> None:
        if response.status_code == 200:
            return
        try:
            error = str(response.json().get("error", ""))
        except ValueError:
            error = ""
        if error == "invalid_grant":
            raise SsoRefused(
                "The provider did not accept this sign-in's code: it expired or was already "
                "used (invalid_grant). Start again."
            )
        if response.status_code >= 500 or not error.replace("_", "").isalnum():
            raise SsoUnavailable(f"its token endpoint answered {response.status_code}")
        raise SsoRefused(f"The provider refused to finish this sign-in ({error}).")

    def verify_token(self, token: str, **kwargs: Any) -> dict[str, Any]:
        """Verify an ID token (``nonce=`` given) or a signed user info response."""
        id_token = "nonce" in kwargs
        try:
            algorithm = jwt.get_unverified_header(token).get("alg")
        except jwt.PyJWTError as exc:
            raise SsoRefused("The provider's answer is not a valid signed token.") from exc
        if algorithm != self.OIDC_RP_SIGN_ALGO:
            raise SsoRefused(
                f"The provider signed its answer with {algorithm!r}, not {self.OIDC_RP_SIGN_ALGO!r}."
            )
        try:
            key = self.retrieve_matching_jwk(token)
        except SuspiciousOperation as exc:
            raise SsoRefused(
                "The provider's answer is signed by a key it does not publish."
            ) from exc
        try:
            payload = jwt.decode(
                token,
                key,
                algorithms=[self.OIDC_RP_SIGN_ALGO],
                audience=self.OIDC_RP_CLIENT_ID,
                issuer=settings.OIDC_ISSUER,
                leeway=_LEEWAY_SECONDS,
                options={"require": ["iss", "aud", "sub", *(["exp", "iat"] if id_token else [])]},
            )
        except jwt.InvalidIssuerError as exc:
            raise SsoRefused(
                "The sign-in answer was issued by another provider than the one this site "
                "trusts (wrong issuer)."
            ) from exc
        except jwt.InvalidAudienceError as exc:
            raise SsoRefused("The sign-in answer was issued for another site (audience).") from exc
        except jwt.ExpiredSignatureError as exc:
            raise SsoRefused("The sign-in answer has expired. Start again.") from exc
        except jwt.PyJWTError as exc:
            raise SsoRefused(f"The sign-in answer is not valid ({exc}).") from exc
        audience = payload["aud"]
        several = isinstance(audience, list) and len(audience) > 1
        if several and payload.get("azp") != self.OIDC_RP_CLIENT_ID:
            raise SsoRefused("The sign-in answer was issued for another site (azp).")
        if id_token and payload.get("nonce") != kwargs["nonce"]:
            raise SsoRefused(
                "The sign-in answer was not issued for the sign-in this browser started "
                "(nonce mismatch). Start again."
            )
        return payload

    def get_or_create_user(self, access_token: str, id_token: str, payload: dict[str, Any]) -> Any:
        userinfo = self.get_userinfo(access_token, id_token, payload)
        if not isinstance(userinfo, dict) or userinfo.get("sub") != payload["sub"]:
            raise SsoRefused("The provider's user info is about someone else than its ID token.")
        # The ID token's claims are signed: where both say something, they win.
        claims = {**userinfo, **payload}
        user = sso_account_resolve(issuer=settings.OIDC_ISSUER, claims=claims)
        sso_groups_sync(user=user, claims=claims)
        logger.info("single sign-on: %r signed in", user.get_username())
        return user
