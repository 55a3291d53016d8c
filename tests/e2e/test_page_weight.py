"""The chat landing page ``/`` stays under 250 KB as a first visit downloads it."""

from __future__ import annotations

import pytest

from bench._page_weight import page_weight
from tests.e2e.conftest import login

pytestmark = pytest.mark.e2e
LIMIT = 250 * 1024


def test_the_landing_page_weighs_under_250_kb_on_the_wire(server, page):
    login(page, server, "alice")
    weight = page_weight(page, server.url + "/")
    paths = {t.path for t in weight.transfers}
    # Everything the page needs was fetched afresh and counted, not served from cache.
    assert {"/", "/static/css/app.css", "/static/django_htmx/htmx-2.min.js"} <= paths
    listing = ", ".join(f"{t.path} {t.wire_bytes}" for t in weight.transfers)
    uncounted = [t.path for t in weight.transfers if t.wire_bytes <= 0]
    assert not uncounted, f"nothing counted on the wire for {uncounted}: {listing}"
    assert weight.wire_bytes < LIMIT, f"{weight.wire_bytes} bytes: {listing}"
