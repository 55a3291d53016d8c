"""Settings for the test run: the product's settings, with a private data directory.

pytest-django loads settings before any conftest runs, so the data directory must be
chosen here (not in a fixture) for the database file, the generated secret key,
persisted results and workspaces to stay out of the developer's ``./var``.
"""

import os
import tempfile

from django.conf import global_settings

# Always private, even when the developer has OPENPROGRAM_HOME set for their own data.
os.environ["OPENPROGRAM_HOME"] = tempfile.mkdtemp(prefix="openprogram-test-")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from openprogram_site.settings import *  # noqa: F403

# Connections are closed after each use, except in the pass that keeps production's
# settings (OPENPROGRAM_TEST_PRODUCTION_CONNECTIONS=1, make test's PostgreSQL pass): there
# database threads (Channels', the turn store's) keep theirs for CONN_MAX_AGE seconds, as
# in production, and tests/conftest.py lets go of them before the test database is dropped.
if os.environ.get("OPENPROGRAM_TEST_PRODUCTION_CONNECTIONS") != "1":
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # noqa: F405

# Users made in this process (the personas, factories) get a fast hash: Django's PBKDF2
# costs ~0.3 s of CPU per password, several hundred times a run. PBKDF2 stays listed, so
# hashes written by the servers the tests start (production's settings) still verify;
# those servers hash as production does.
PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.MD5PasswordHasher",
    *global_settings.PASSWORD_HASHERS,
]
