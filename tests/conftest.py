"""Shared fixtures: isolated data directory, the personas alice, bob and an admin."""

from __future__ import annotations

import os

# tests/settings.py has already chosen a private data directory (pytest-django
# loads settings before any conftest); the framework's own config reads the same
# variable, so both agree on it.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import pytest

PASSWORD = "correct-horse-battery-staple"


def pytest_collection_modifyitems(config, items):
    """Run the browser tests last: they are the slowest, and nothing else should run
    while their Playwright event loop or their daphne servers are alive."""
    items.sort(key=lambda item: item.get_closest_marker("e2e") is not None)


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user("alice", password=PASSWORD)


@pytest.fixture
def bob(django_user_model):
    return django_user_model.objects.create_user("bob", password=PASSWORD)


@pytest.fixture
def admin_user(django_user_model):
    return django_user_model.objects.create_superuser("admin", password=PASSWORD)


@pytest.fixture
def alice_client(client, alice):
    client.force_login(alice)
    return client


@pytest.fixture
def bob_client(client, bob):
    client.force_login(bob)
    return client


@pytest.fixture
def admin_client(client, admin_user):
    client.force_login(admin_user)
    return client


@pytest.fixture
def clean_registry():
    """Let a test register tools freely; the registry is restored afterwards."""
    from openprogram.programs.registry import restore_registry, snapshot_registry

    snapshot = snapshot_registry()
    yield
    restore_registry(snapshot)
