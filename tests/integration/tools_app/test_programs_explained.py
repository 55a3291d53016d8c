"""The Programs page explains itself in words: the offered count, reasons, several adds at once."""

from __future__ import annotations

import pytest

from tests.integration.tools_app.conftest import MISSING_ENV
from tools_app import selectors, services

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}


def test_the_panel_says_why_the_offered_count_differs_from_the_profile(alice, alice_client):
    services.profile_create(
        owner=alice, name="lean", tools=["read_notes", "web_lookup", "mcp__demo__echo"]
    )
    html = alice_client.get("/programs/profiles/lean/", **HX).content.decode()
    # 3 listed; web_lookup held back (its key is missing); tool_search added for the deferred one.
    assert "This profile lists 3 tools; a chat turn is offered 3." in html
    assert (
        f"web_lookup</span> is not offered: Can&#x27;t run right now: requires_env {MISSING_ENV}"
        in html
    )
    assert "tool_search</span> is added" in html
    assert "<code>L4</code>" in html  # the layer code stays, inside a details element


def test_a_profile_offered_exactly_as_listed_needs_no_explanation(alice, alice_client):
    services.profile_create(owner=alice, name="plain", tools=["read_notes"])
    html = alice_client.get("/programs/profiles/plain/", **HX).content.decode()
    assert 'data-testid="offer-gap"' not in html


def test_why_not_offered_reads_as_words_with_the_layer_code_kept(alice, alice_client):
    services.profile_create(owner=alice, name="plain", tools=["read_notes"])
    html = alice_client.get("/programs/profiles/plain/", **HX).content.decode()
    assert '<span data-testid="why-words">Not in this profile</span>' in html
    assert "<code>L2b</code> not in the profile list" in html
    detail = alice_client.get("/programs/tools/write_notes/?profile=plain", **HX).content.decode()
    assert "Not offered: Not in this profile." in detail
    assert 'data-profile="plain"' in detail


def test_the_admins_reason_for_a_global_disable_reaches_the_page(alice, alice_client, admin_user):
    services.profile_create(owner=alice, name="p", tools=["read_notes", "write_notes"])
    services.tool_disable(name="write_notes", by=admin_user, reason="leaks   notes\nupstream")
    html = alice_client.get("/programs/profiles/p/", **HX).content.decode()
    assert "Turned off for everyone by an admin: leaks notes upstream" in html


def test_several_tools_are_added_back_at_once(alice, alice_client):
    services.profile_create(owner=alice, name="p", tools=["read_notes"])
    html = alice_client.post(
        "/programs/profiles/p/tools/add/", {"tool": ["write_notes", "web_lookup"]}, **HX
    ).content.decode()
    assert selectors.profile_tool_names(owner=alice, name="p") == [
        "read_notes",
        "write_notes",
        "web_lookup",
    ]
    assert 'value="mcp__demo__echo" data-testid="add-tool-choice"' in html
    assert 'value="write_notes" data-testid="add-tool-choice"' not in html


def test_adding_with_one_bad_name_adds_none_and_says_which(alice, alice_client):
    services.profile_create(owner=alice, name="p", tools=["read_notes"])
    html = alice_client.post(
        "/programs/profiles/p/tools/add/", {"tool": ["write_notes", "nope"]}, **HX
    ).content.decode()
    assert "No registered tool named &#x27;nope&#x27;." in html
    assert selectors.profile_tool_names(owner=alice, name="p") == ["read_notes"]
    nothing = alice_client.post("/programs/profiles/p/tools/add/", {}, **HX).content.decode()
    assert "Choose at least one tool to add." in nothing


def test_bob_cannot_add_tools_to_alices_profile(alice, bob_client):
    services.profile_create(owner=alice, name="p", tools=["read_notes"])
    html = bob_client.post(
        "/programs/profiles/p/tools/add/", {"tool": ["write_notes"]}, **HX
    ).content.decode()
    assert 'role="alert"' in html
    assert selectors.profile_tool_names(owner=alice, name="p") == ["read_notes"]


def test_the_catalog_search_keeps_the_selected_profile(alice, alice_client):
    page = alice_client.get("/programs/?profile=default").content.decode()
    # The search box, three filters and the results' own refresh all send the profile along.
    assert page.count('hx-include="#catalog-filters, #catalog-profile"') == 5
    services.profile_create(owner=alice, name="lean", tools=["read_notes"])
    html = alice_client.get("/programs/catalog/?q=notes&profile=lean", **HX).content.decode()
    assert html.count('data-testid="badge-in-profile"') == 1
    assert "in lean" in html
