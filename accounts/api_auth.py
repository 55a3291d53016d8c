"""django-ninja authentication: the browser session (with CSRF) or a bearer API token."""

from __future__ import annotations

from django.http import HttpRequest
from ninja.security import APIKeyCookie, HttpBearer

from accounts.services import api_token_verify

__all__ = ["BearerTokenAuth", "SessionAuth", "api_auth"]


class SessionAuth(APIKeyCookie):
    """The logged-in browser session; unsafe methods must carry the CSRF token."""

    param_name = "sessionid"

    def __init__(self) -> None:
        super().__init__(csrf=True)

    def _get_key(self, request: HttpRequest) -> str | None:
        # No session, nothing to forge: answer 401 (from the API's auth error), not a
        # CSRF 403, so a script learns it must authenticate. A logged-in session still
        # needs the CSRF token on every unsafe method.
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return None
        return super()._get_key(request)

    def authenticate(self, request: HttpRequest, key: str | None):
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            return user
        return None


class BearerTokenAuth(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str):
        row = api_token_verify(token=token)
        if row is None:
            return None
        request.user = row.user
        request.api_token_name = row.name  # the audit trail names the token
        request.api_token_id = row.pk  # a turn it starts stops when it is revoked
        return row.user


api_auth = [BearerTokenAuth(), SessionAuth()]
