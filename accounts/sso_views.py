"""Single sign-on pages: start, callback, and logout (also at the provider).

mozilla-django-oidc's views do the protocol: the start view keeps a random state, nonce and
PKCE verifier in the session and sends the browser to the provider; the callback view
spends that state and calls the backend (``accounts.sso_backend``). Here they read the
endpoints from the discovery document, and every way a sign-on can fail ends on one page
that says why (``accounts/sso_refused.html``: 403, or 502 when the provider is unreachable),
never a stack trace or a bare 400.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.views import LogoutView
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views import View
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from accounts.sso_errors import SsoRefused, SsoUnavailable
from accounts.sso_provider import provider_metadata

__all__ = ["SignOutView", "SsoCallbackView", "SsoStartView"]

logger = logging.getLogger(__name__)

_STATE_MISMATCH = (
    "This sign-in answer does not belong to a sign-in started in this browser (its state "
    "does not match). Start again from the sign-in page."
)
_ERROR_CODE = re.compile(r"[a-z_]{1,40}")


def _refused(request: HttpRequest, reason: str, *, status: int = 403) -> HttpResponse:
    logger.warning("single sign-on refused: %s", reason)
    return render(
        request,
        "accounts/sso_refused.html",
        {"reason": reason, "provider": settings.OIDC_PROVIDER_NAME},
        status=status,
    )


def _unavailable(request: HttpRequest, exc: SsoUnavailable) -> HttpResponse:
    return _refused(
        request,
        f"The sign-in provider could not be used: {exc}. Try again later, or ask an administrator.",
        status=502,
    )


class SsoStartView(OIDCAuthenticationRequestView):
    def __init__(self, **kwargs) -> None:
        # The library's __init__ reads the authorization endpoint from settings; ours is
        # in the discovery document, read when a sign-on starts.
        View.__init__(self, **kwargs)
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID

    def get(self, request: HttpRequest) -> HttpResponse:
        if not settings.SSO_ENABLED:
            raise Http404
        try:
            self.OIDC_OP_AUTH_ENDPOINT = provider_metadata()["authorization_endpoint"]
        except SsoUnavailable as exc:
            return _unavailable(request, exc)
        return super().get(request)


class SsoCallbackView(OIDCAuthenticationCallbackView):
    def get(self, request: HttpRequest) -> HttpResponse:
        if not settings.SSO_ENABLED:
            raise Http404
        # RFC 9207: a provider that names itself in the answer must be ours (mix-up).
        if "iss" in request.GET and request.GET["iss"] != settings.OIDC_ISSUER:
            return _refused(
                request,
                "The sign-in answer came from another provider than the one this site "
                "trusts (wrong issuer).",
            )
        if "error" in request.GET:
            return self._provider_error(request)
        try:
            response = super().get(request)
        except SuspiciousOperation:
            return _refused(request, _STATE_MISMATCH)
        except SsoRefused as exc:
            request.session.pop("oidc_id_token", None)
            return _refused(request, str(exc))
        except SsoUnavailable as exc:
            request.session.pop("oidc_id_token", None)
            return _unavailable(request, exc)
        return response

    def _provider_error(self, request: HttpRequest) -> HttpResponse:
        # Only an answer to a sign-in this browser started is believed (and spent); the
        # library would also log the user out on any forged error link.
        states = request.session.get("oidc_states") or {}
        if request.GET.get("state") not in states:
            return _refused(request, _STATE_MISMATCH)
        del states[request.GET["state"]]
        request.session["oidc_states"] = states
        code = request.GET["error"]
        named = f" ({code})" if _ERROR_CODE.fullmatch(code) else ""
        if code == "access_denied":
            return _refused(request, f"The provider refused the sign-in{named}.")
        return _refused(request, f"The provider could not sign you in{named}.")

    def login_failure(self) -> HttpResponse:
        self.request.session.pop("oidc_id_token", None)
        user = getattr(self, "user", None)
        if user is not None and not user.is_active:
            return _refused(self.request, "This account is deactivated here.")
        return _refused(self.request, "The sign-in did not complete. Start again.")


class SignOutView(LogoutView):
    """Django's logout; after a single sign-on, also at the provider when it offers it.

    The way there is a page that moves on by itself, not a redirect: the logout form's
    page allows forms to post only here (``form-action 'self'``), and browsers hold the
    redirects after a form to that too.
    """

    def post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        at_provider = _provider_logout_url(request)
        response = super().post(request, *args, **kwargs)
        if not at_provider:
            return response
        return render(
            request,
            "accounts/sso_logout.html",
            {"provider_url": at_provider, "provider": settings.OIDC_PROVIDER_NAME},
        )


def _provider_logout_url(request: HttpRequest) -> str | None:
    """The provider's end-session URL for this session (OpenID RP-Initiated Logout 1.0)."""
    id_token = request.session.get("oidc_id_token")
    if not (settings.SSO_ENABLED and settings.OIDC_LOGOUT_AT_PROVIDER and id_token):
        return None
    try:
        endpoint = provider_metadata().get("end_session_endpoint")
    except SsoUnavailable:
        return None
    if not isinstance(endpoint, str):
        return None
    query = urlencode(
        {
            "id_token_hint": id_token,
            "client_id": settings.OIDC_RP_CLIENT_ID,
            "post_logout_redirect_uri": request.build_absolute_uri(reverse("login")),
        }
    )
    return f"{endpoint}{'&' if '?' in endpoint else '?'}{query}"
