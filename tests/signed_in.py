"""A person signed in to a test server over HTTP: the login form, then the app's own pages
and JSON API with that session, as a browser or a script would.

What tests set up this way costs no Django start-up (a ``manage.py shell`` costs seconds of
CPU); a login costs the server one password hash as production computes it (~0.7 s).
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from pathlib import Path

import requests
from django.conf import settings

from tests.servers import PASSWORD, DaphneServer

__all__ = ["SignedIn", "sign_in"]

_FORM_TOKEN = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
_NEW_API_TOKEN = re.compile(r'data-testid="new-token">.*?<code>(op_[\w-]+)</code>', re.DOTALL)
_TIMEOUT = 60  # a loaded 2-core machine can take seconds for one page


@dataclass(frozen=True)
class SignedIn:
    """One session of ``username`` on ``server`` (a new one per :func:`sign_in`)."""

    server: DaphneServer
    username: str
    http: requests.Session

    @property
    def cookie(self) -> str:
        """The session as a ``Cookie`` header (for a WebSocket)."""
        name = settings.SESSION_COOKIE_NAME
        return f"{name}={self.http.cookies[name]}"

    @property
    def workspace(self) -> Path:
        """The user's workspace on the server (``<home>/workspaces/<user id>``, the real
        path), created owner-only as the server creates it."""
        ((user_id,),) = self.server.sql(
            "SELECT id FROM auth_user WHERE username = ?", (self.username,)
        )
        workspace = self.server.home / "workspaces" / str(user_id)
        workspace.mkdir(parents=True, exist_ok=True, mode=0o700)
        return workspace.resolve()

    def conversation(self, *, model: str = "offline") -> str:
        """A new conversation of this user's, through the API; its public id."""
        response = self.http.post(
            self.server.url + "/api/conversations",
            json={"model": model},
            headers=self._csrf(),
            timeout=_TIMEOUT,
        )
        assert response.status_code == 201, response.text[:500]
        return response.json()["id"]

    def conversation_key(self, public_id: str) -> int:
        """A conversation's database key (Django keeps a UUID in SQLite as 32 hex digits)."""
        ((key,),) = self.server.sql(
            "SELECT id FROM chat_app_conversation WHERE public_id = ?", (uuid.UUID(public_id).hex,)
        )
        return key

    def delete_conversation(self, public_id: str) -> None:
        """Delete one of this user's conversations, through the API."""
        response = self.http.delete(
            f"{self.server.url}/api/conversations/{public_id}",
            headers=self._csrf(),
            timeout=_TIMEOUT,
        )
        assert response.status_code == 204, response.text[:500]

    def api_token(self, name: str) -> str:
        """A new API token, made on the account page; the clear token it shows once."""
        response = self.http.post(
            self.server.url + "/account/",
            data={"action": "token", "name": name},
            headers=self._csrf(),
            timeout=_TIMEOUT,
        )
        assert response.status_code == 200, response.text[:500]
        match = _NEW_API_TOKEN.search(response.text)
        assert match, "the account page showed no new token"
        return match.group(1)

    def _csrf(self) -> dict[str, str]:
        return {"X-CSRFToken": self.http.cookies[settings.CSRF_COOKIE_NAME]}


def sign_in(server: DaphneServer, username: str) -> SignedIn:
    """A new session of ``username`` (password ``PASSWORD``), through the login form."""
    http = requests.Session()
    page = http.get(server.url + "/login/", timeout=_TIMEOUT)
    response = http.post(
        server.url + "/login/",
        data={
            "csrfmiddlewaretoken": _FORM_TOKEN.search(page.text).group(1),
            "username": username,
            "password": PASSWORD,
        },
        allow_redirects=False,
        timeout=_TIMEOUT,
    )
    assert response.status_code == 302, f"{username} was not signed in: {response.status_code}"
    assert settings.SESSION_COOKIE_NAME in http.cookies, "the login set no session cookie"
    return SignedIn(server=server, username=username, http=http)
