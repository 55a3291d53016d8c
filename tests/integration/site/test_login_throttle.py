"""Failed sign-ins, counted in the database per account name and per address."""

from __future__ import annotations

from datetime import timedelta

import pytest

from accounts.models import LoginFailure
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def small_limits(settings):
    settings.LOGIN_MAX_FAILURES_PER_ACCOUNT = 3
    settings.LOGIN_MAX_FAILURES_PER_ADDRESS = 5
    settings.LOGIN_LOCKOUT_SECONDS = 600


def _login(client, username: str, password: str, address: str = "203.0.113.7"):
    return client.post("/login/", {"username": username, "password": password}, REMOTE_ADDR=address)


def test_a_locked_account_is_refused_before_its_password_is_checked(client, alice):
    for _ in range(3):
        assert _login(client, "Alice", "nope").status_code == 200  # names fold case
    locked = _login(client, "alice", PASSWORD)
    assert locked.status_code == 429
    assert "Try again in 10 minutes, or use a login link." in locked.content.decode()
    assert "_auth_user_id" not in client.session
    # A locked attempt is not counted: the lock cannot be extended by knocking.
    assert LoginFailure.objects.filter(username="alice").count() == 3


def test_the_lock_lifts_when_the_failures_leave_the_window(client, alice):
    for _ in range(3):
        _login(client, "alice", "nope")
    assert _login(client, "alice", PASSWORD).status_code == 429
    LoginFailure.objects.update(at=LoginFailure.objects.first().at - timedelta(seconds=601))
    assert _login(client, "alice", PASSWORD).status_code == 302
    assert not LoginFailure.objects.filter(username="alice").exists()


def test_another_address_is_not_locked_by_one_addresss_guesses(client, bob):
    for n in range(5):
        _login(client, f"guess{n}", "nope", address="198.51.100.1")
    refused = _login(client, "bob", PASSWORD, address="198.51.100.1")
    assert refused.status_code == 429
    assert "from your address" in refused.content.decode()
    assert _login(client, "bob", PASSWORD, address="198.51.100.2").status_code == 302


def test_logging_in_to_ones_own_account_does_not_wipe_guesses_at_others(client, alice, bob):
    address = "198.51.100.9"
    for _ in range(2):
        _login(client, "alice", "nope", address=address)
    _login(client, "bob", "typo", address=address)
    assert _login(client, "bob", PASSWORD, address=address).status_code == 302
    assert not LoginFailure.objects.filter(username="bob").exists()
    assert LoginFailure.objects.filter(address=address, username="alice").count() == 2
