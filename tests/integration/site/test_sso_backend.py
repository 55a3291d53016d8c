"""accounts.sso_backend: the ID token checks the library leaves to us, one by one.

Tokens are signed here with a key of the test's own, which stands in for the provider's
published key; the browser tests (tests/e2e/test_sso.py) run the same checks against a
real provider's tokens.
"""

from __future__ import annotations

import time

import jwt
import pytest
import requests
from cryptography.hazmat.primitives.asymmetric import rsa

from accounts.sso_backend import SsoBackend
from accounts.sso_errors import SsoRefused, SsoUnavailable

pytestmark = pytest.mark.django_db

ISSUER = "https://id.example.com"
CLIENT = "openprogram"
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture
def backend(settings, monkeypatch):
    settings.OIDC_ISSUER = ISSUER
    settings.OIDC_RP_CLIENT_ID = CLIENT
    settings.OIDC_RP_CLIENT_SECRET = "secret"
    settings.OIDC_RP_SIGN_ALGO = "RS256"
    backend = SsoBackend()
    monkeypatch.setattr(backend, "retrieve_matching_jwk", lambda token: KEY.public_key())
    return backend


def _token(key=KEY, algorithm="RS256", **overrides) -> str:
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": CLIENT, "sub": "s-1", "iat": now, "exp": now + 300}
    claims.update({"nonce": "n-1", **overrides})
    return jwt.encode({k: v for k, v in claims.items() if v is not None}, key, algorithm)


def test_a_good_id_token_passes(backend):
    assert backend.verify_token(_token(), nonce="n-1")["sub"] == "s-1"


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        ({"iss": "https://evil.example.com"}, "wrong issuer"),
        ({"iss": None}, "not valid"),
        ({"aud": "another-client"}, "(audience)"),
        ({"aud": [CLIENT, "another-client"]}, "(azp)"),
        ({"aud": [CLIENT, "another-client"], "azp": "another-client"}, "(azp)"),
        ({"exp": int(time.time()) - 3600}, "has expired"),
        ({"exp": None}, "not valid"),
        ({"nonce": "n-other"}, "nonce mismatch"),
        ({"nonce": None}, "nonce mismatch"),
    ],
)
def test_a_bad_id_token_is_refused_naming_why(backend, overrides, reason):
    with pytest.raises(SsoRefused, match=reason.replace("(", r"\(").replace(")", r"\)")):
        backend.verify_token(_token(**overrides), nonce="n-1")


def test_several_audiences_pass_when_we_are_the_authorized_party(backend):
    token = _token(aud=[CLIENT, "another-client"], azp=CLIENT)
    assert backend.verify_token(token, nonce="n-1")["azp"] == CLIENT


def test_a_token_signed_with_another_algorithm_is_refused(backend):
    # The classic confusion: HMAC "signed" with what an attacker knows (here the secret).
    with pytest.raises(SsoRefused, match="'HS256'"):
        backend.verify_token(_token(key="secret" * 6, algorithm="HS256"), nonce="n-1")
    with pytest.raises(SsoRefused, match="'none'"):
        backend.verify_token(jwt.encode({"sub": "s-1"}, None, "none"), nonce="n-1")


def test_a_token_signed_by_another_key_is_refused(backend):
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    with pytest.raises(SsoRefused, match="not valid"):
        backend.verify_token(_token(key=other), nonce="n-1")


def _response(status: int, body: bytes) -> requests.Response:
    response = requests.Response()
    response.status_code = status
    response._content = body
    return response


def test_token_endpoint_errors_are_a_refusal_or_an_outage(backend):
    with pytest.raises(SsoRefused, match="invalid_grant"):
        backend.raise_token_response_error(_response(400, b'{"error": "invalid_grant"}'))
    with pytest.raises(SsoRefused, match=r"\(invalid_client\)"):
        backend.raise_token_response_error(_response(401, b'{"error": "invalid_client"}'))
    with pytest.raises(SsoUnavailable, match="502"):
        backend.raise_token_response_error(_response(502, b"<html>bad gateway</html>"))
    with pytest.raises(SsoUnavailable):
        backend.raise_token_response_error(_response(400, b'{"error": "<script>"}'))


def test_user_info_about_someone_else_is_refused(backend, monkeypatch):
    monkeypatch.setattr(backend, "get_userinfo", lambda *a: {"sub": "s-2", "email": "x@y"})
    with pytest.raises(SsoRefused, match="someone else"):
        backend.get_or_create_user("access", "id", {"sub": "s-1"})


def test_a_password_login_is_not_this_backends_business(backend, rf):
    request = rf.post("/login/?code=stolen&state=s")
    with pytest.raises(TypeError):
        backend.authenticate(request, username="alice", password="x")  # type: ignore[call-arg]
