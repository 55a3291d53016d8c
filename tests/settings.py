"""Settings for the test run: the product's settings, with a private data directory.

pytest-django loads settings before any conftest runs, so the data directory must be
chosen here (not in a fixture) for the database file, the generated secret key,
persisted results and workspaces to stay out of the developer's ``./var``.
"""

import os
import tempfile

# Always private, even when the developer has OPENPROGRAM_HOME set for their own data.
os.environ["OPENPROGRAM_HOME"] = tempfile.mkdtemp(prefix="openprogram-test-")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from openprogram_site.settings import *  # noqa: F403

# pytest-django drops the test database at the end, which PostgreSQL refuses while a
# database thread (Channels', chat_app.db_batch's) still holds a kept-open connection.
DATABASES["default"]["CONN_MAX_AGE"] = 0  # noqa: F405
