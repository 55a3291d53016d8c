"""Shared fixtures: isolated data directory, the personas alice, bob and an admin."""

from __future__ import annotations

import os

# tests/settings.py has already chosen a private data directory (pytest-django
# loads settings before any conftest); the framework's own config reads the same
# variable, so both agree on it.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import shutil
import tempfile

import pytest

from tests.servers import TEMPLATES_ENV

PASSWORD = "correct-horse-battery-staple"


# What pytest-django needs before a test may touch the test database. A test with none of
# these cannot open it (pytest-django refuses), and the daphne servers tests start use a
# SQLite file of their own unless given DATABASE_URL (tests/servers.py).
_DATABASE_FIXTURES = frozenset(
    {"db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback"}
)


def pytest_addoption(parser):
    parser.addoption(
        "--database-tests-only",
        action="store_true",
        help="keep only the tests that use the test database (make test's PostgreSQL pass)",
    )


def pytest_configure(config):
    """A directory for this session's template databases (tests/servers.py), made by the
    main process before it starts any xdist worker, so that every worker inherits it."""
    if hasattr(config, "workerinput"):
        return
    config._openprogram_templates = (
        os.environ.get(TEMPLATES_ENV),
        tempfile.mkdtemp(prefix="openprogram-test-templates-"),
    )
    os.environ[TEMPLATES_ENV] = config._openprogram_templates[1]


def pytest_unconfigure(config):
    if not hasattr(config, "_openprogram_templates"):
        return
    previous, directory = config._openprogram_templates
    shutil.rmtree(directory, ignore_errors=True)
    if previous is None:
        os.environ.pop(TEMPLATES_ENV, None)
    else:
        os.environ[TEMPLATES_ENV] = previous


def uses_test_database(item) -> bool:
    return item.get_closest_marker("django_db") is not None or bool(
        _DATABASE_FIXTURES & set(getattr(item, "fixturenames", ()))
    )


def pytest_collection_modifyitems(config, items):
    """Run the browser tests last: they are the slowest, and nothing else should run
    while their Playwright event loop or their daphne servers are alive.

    With ``--database-tests-only``, drop every test that never opens the test database:
    run again on PostgreSQL it would run exactly as it did on SQLite. A selection left
    empty makes pytest exit 5, which ``make test`` counts as a failure.
    """
    if config.getoption("--database-tests-only"):
        kept = [item for item in items if uses_test_database(item)]
        dropped = [item for item in items if not uses_test_database(item)]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = kept
    items.sort(key=lambda item: item.get_closest_marker("e2e") is not None)


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's test database; before it is dropped, PostgreSQL's sessions of the
    database threads that kept their connection (CONN_MAX_AGE, tests/settings.py) end."""
    yield
    from django.db import connection

    if connection.vendor == "postgresql" and connection.settings_dict["CONN_MAX_AGE"]:
        with django_db_blocker.unblock(), connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )


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
