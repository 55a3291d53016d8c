"""Shared fixtures: isolated data directory, the personas alice, bob and an admin."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

# Every test run gets its own data directory before Django settings load.
_home = Path(tempfile.mkdtemp(prefix="openprogram-test-"))
os.environ.setdefault("OPENPROGRAM_HOME", str(_home))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import pytest  # noqa: E402

PASSWORD = "correct-horse-battery-staple"


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
