"""Single sign-on's pages and settings, without a provider (tests/e2e/test_sso.py has one).

The issuer here is a loopback port nobody listens on: any path that reached the provider
would answer 502, so a page that answers otherwise never asked it.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from accounts.sso_provider import provider_metadata_forget
from tests.conftest import PASSWORD
from tests.servers import ROOT, free_port

pytestmark = pytest.mark.django_db

SSO_BACKEND = "accounts.sso_backend.SsoBackend"


@pytest.fixture
def sso(settings):
    provider_metadata_forget()
    settings.SSO_ENABLED = True
    settings.OIDC_ISSUER = f"http://127.0.0.1:{free_port()}"
    settings.OIDC_RP_CLIENT_ID = "openprogram"
    settings.OIDC_RP_CLIENT_SECRET = "secret"
    settings.OIDC_PROVIDER_NAME = "Example ID"
    settings.AUTHENTICATION_BACKENDS = ["django.contrib.auth.backends.ModelBackend", SSO_BACKEND]
    yield settings
    provider_metadata_forget()


def _login(client, username: str, path: str = "/login/"):
    return client.post(path, {"username": username, "password": PASSWORD})


def test_without_an_issuer_there_is_no_single_sign_on(client):
    assert b"Sign in with" not in client.get("/login/").content
    assert client.get("/login/sso/").status_code == 404
    assert client.get("/login/sso/callback/?code=x&state=y").status_code == 404


def test_the_login_page_offers_the_provider_and_passes_next_on(client, sso):
    page = client.get("/login/?next=/programs/").content.decode()
    assert "Sign in with Example ID" in page
    assert 'href="/login/sso/?next=/programs/"' in page
    assert "Password sign-in is for staff." not in page


def test_an_unreachable_provider_is_a_clear_502_page(client, sso):
    response = client.get("/login/sso/")
    assert response.status_code == 502
    assert b"The sign-in provider could not be used" in response.content
    assert b"Traceback" not in response.content


def test_a_password_login_never_reaches_the_sso_backend(client, alice, sso):
    # The library's backend reads code and state from the query string of any request.
    response = _login(client, "alice", "/login/?code=stolen&state=anything")
    assert response.status_code == 302
    assert client.session["_auth_user_backend"] == "django.contrib.auth.backends.ModelBackend"


def test_a_forged_provider_error_neither_is_believed_nor_logs_anyone_out(alice_client, sso):
    response = alice_client.get("/login/sso/callback/?error=access_denied&state=forged")
    assert response.status_code == 403
    assert b"its state does not match" in response.content
    assert alice_client.get("/programs/").status_code == 200


def test_an_answer_naming_another_issuer_is_refused(client, sso):
    response = client.get("/login/sso/callback/?code=x&state=y&iss=https://evil.example")
    assert response.status_code == 403
    assert b"wrong issuer" in response.content


def test_a_callback_without_a_started_sign_in_is_refused_with_a_page(client, sso):
    response = client.get("/login/sso/callback/?code=x&state=y")
    assert response.status_code == 403
    assert b"The sign-in did not complete" in response.content


def test_sso_only_refuses_a_non_staff_password_as_a_wrong_one_would_be(client, alice, sso):
    sso.OIDC_SSO_ONLY = True
    assert b"Password sign-in is for staff." in client.get("/login/").content
    refused = _login(client, "alice")
    wrong = client.post("/login/", {"username": "alice", "password": "not-it"})
    assert refused.status_code == wrong.status_code == 200
    assert b"signs in with Example ID only" in refused.content
    assert refused.context["form"].errors == wrong.context["form"].errors
    assert client.get("/programs/").status_code == 302


def test_sso_only_still_lets_staff_use_a_password(client, admin_user, sso):
    sso.OIDC_SSO_ONLY = True
    assert _login(client, "admin").status_code == 302
    assert client.get("/programs/").status_code == 200


def test_a_session_of_a_deactivated_sso_user_ends(client, alice, sso):
    client.force_login(alice, backend=SSO_BACKEND)
    assert client.get("/programs/").status_code == 200
    alice.is_active = False
    alice.save(update_fields=["is_active"])
    assert client.get("/programs/").status_code == 302


def test_logout_of_a_password_session_stays_here(alice_client, sso):
    response = alice_client.post("/logout/")
    assert response.status_code == 302 and response["Location"] == "/login/"


def _settings_error(**env: str) -> str:
    code = "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='openprogram_site.settings'; django.setup()"
    base = {k: v for k, v in os.environ.items() if not k.startswith("OIDC_")}
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        check=False,
    )
    return result.stderr


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"OIDC_ISSUER": "http://id.example.com"}, "must be an https:// URL"),
        ({"OIDC_ISSUER": "https://id.example.com"}, "OIDC_CLIENT_ID and OIDC_CLIENT_SECRET"),
        ({"OIDC_SSO_ONLY": "1"}, "OIDC_SSO_ONLY needs single sign-on"),
        ({"OIDC_LINK_CLAIM": "email"}, "can be chosen by the user"),
        ({"OIDC_GROUP_MAP": "eng"}, "is not claim_value=Group"),
    ],
)
def test_a_bad_sso_setting_stops_start_up_naming_it(env, message):
    assert message in _settings_error(**env)
