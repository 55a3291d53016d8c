"""The account page: the make-run admin sets a password; API tokens shown once, revocable."""

from __future__ import annotations

import pytest
from django.test import Client

from accounts.models import ApiToken
from accounts.services import admin_ensure, login_token_create

pytestmark = pytest.mark.django_db

NEW_PASSWORD = "a-long-new-passphrase-42"


def test_the_admin_from_make_run_sets_a_password_and_signs_back_in_after_logout(client):
    admin = admin_ensure()
    assert not admin.has_usable_password()
    link = login_token_create(user=admin)
    assert client.get(f"/login/token/{link}/").status_code == 302

    page = client.get("/account/").content.decode()
    assert "Set a password" in page and "old_password" not in page
    response = client.post(
        "/account/",
        {"action": "password", "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
    )
    assert response.status_code == 302
    client.post("/logout/")
    assert client.get("/account/").status_code == 302  # signed out

    signed_in = client.post("/login/", {"username": admin.username, "password": NEW_PASSWORD})
    assert signed_in.status_code == 302
    assert client.get("/account/").status_code == 200


def test_a_password_that_does_not_match_is_refused_with_a_message(alice_client):
    response = alice_client.post(
        "/account/",
        {
            "action": "password",
            "old_password": "wrong",
            "new_password1": NEW_PASSWORD,
            "new_password2": "something else",
        },
    )
    assert response.status_code == 422
    assert "errorlist" in response.content.decode()


def test_a_token_is_shown_once_works_and_can_be_revoked(alice_client, alice):
    created = alice_client.post("/account/", {"action": "token", "name": "laptop script"})
    token = created.context["new_token"]
    assert token in created.content.decode()
    again = alice_client.get("/account/").content.decode()
    assert token not in again and "laptop script" in again

    api = Client()
    assert api.get("/api/me", HTTP_AUTHORIZATION=f"Bearer {token}").json()["username"] == "alice"
    token_id = ApiToken.objects.get(user=alice).pk
    assert alice_client.post(f"/account/tokens/{token_id}/revoke/").status_code == 302
    assert api.get("/api/me", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 401


def test_a_token_needs_a_name(alice_client):
    response = alice_client.post("/account/", {"action": "token", "name": "  "})
    assert response.status_code == 422 and "name of 1 to 100" in response.content.decode()
    assert not ApiToken.objects.exists()


def test_bob_cannot_see_or_revoke_alices_tokens(alice_client, alice, bob):
    alice_client.post("/account/", {"action": "token", "name": "alice-only"})
    token_id = ApiToken.objects.get(user=alice).pk
    bob_client = Client()
    bob_client.force_login(bob)

    assert "alice-only" not in bob_client.get("/account/").content.decode()
    assert bob_client.post(f"/account/tokens/{token_id}/revoke/").status_code == 404
    assert ApiToken.objects.filter(pk=token_id).exists()
