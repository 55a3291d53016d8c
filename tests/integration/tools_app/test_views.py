"""The Programs page and its htmx partials."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.integration.tools_app.conftest import MISSING_ENV
from tools_app import selectors, services

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}


def test_the_page_shows_catalog_profiles_and_cost(alice_client):
    html = alice_client.get("/programs/").content.decode()
    for name in ("read_notes", "write_notes", "web_lookup", "mcp__demo__echo"):
        assert f'data-tool="{name}"' in html
    assert "hidden_helper" not in html
    assert 'data-testid="profile-cost"' in html
    assert "globally disabled" not in html
    assert f"L4: requires_env {MISSING_ENV}" in html or MISSING_ENV in html


def test_live_search_returns_only_matching_tools(alice_client):
    html = alice_client.get("/programs/catalog/?q=web", **HX).content.decode()
    assert 'data-tool="web_lookup"' in html
    assert 'data-tool="read_notes"' not in html
    assert "1 tool" in html


def test_catalog_filters_by_state(alice_client):
    html = alice_client.get("/programs/catalog/?state=deferred", **HX).content.decode()
    assert 'data-tool="mcp__demo__echo"' in html
    assert 'data-tool="read_notes"' not in html


def test_create_profile_inline_errors_and_success(alice, alice_client):
    ok = alice_client.post("/programs/new-profile/", {"name": "research"}, **HX)
    assert ok.status_code == 200
    assert 'data-profile="research"' in ok.content.decode()
    assert ok["HX-Push-Url"].endswith("?profile=research")
    dup = alice_client.post("/programs/new-profile/", {"name": "Research"}, **HX).content.decode()
    assert 'role="alert"' in dup
    assert "already have a tool profile named &#x27;Research&#x27;" in dup
    empty = alice_client.post("/programs/new-profile/", {"name": ""}, **HX).content.decode()
    assert "A profile name is required." in empty
    reserved = alice_client.post("/programs/new-profile/", {"name": "default"}, **HX)
    assert "is reserved" in reserved.content.decode()
    assert selectors.profile_names(owner=alice) == ["default", "research"]


def test_remove_add_rename_delete_through_the_page(alice, alice_client):
    services.profile_create(owner=alice, name="p")
    alice_client.post("/programs/profiles/p/tools/write_notes/remove/", **HX)
    assert "write_notes" not in selectors.profile_tool_names(owner=alice, name="p")
    html = alice_client.post("/programs/profiles/p/tools/add/", {"tool": "write_notes"}, **HX)
    assert "write_notes" in selectors.profile_tool_names(owner=alice, name="p")
    assert html.status_code == 200
    renamed = alice_client.post("/programs/profiles/p/rename/", {"new_name": "q"}, **HX)
    assert 'data-profile="q"' in renamed.content.decode()
    alice_client.post("/programs/profiles/q/delete/", **HX)
    assert selectors.profile_names(owner=alice) == ["default"]


def test_editing_default_shows_an_inline_error(alice_client):
    html = alice_client.post("/programs/profiles/default/rename/", {"new_name": "x"}, **HX)
    assert "cannot be changed" in html.content.decode()


def test_bob_cannot_open_or_edit_alices_profile(alice, bob_client):
    services.profile_create(owner=alice, name="secret", tools=["read_notes"])
    panel = bob_client.get("/programs/profiles/secret/", **HX).content.decode()
    assert 'data-profile="secret"' not in panel
    assert 'data-profile="default"' in panel
    html = bob_client.post("/programs/profiles/secret/tools/read_notes/remove/", **HX)
    assert "No tool profile named &#x27;secret&#x27;" in html.content.decode()
    assert selectors.profile_tool_names(owner=alice, name="secret") == ["read_notes"]


def test_tool_detail_shows_schema_and_why_not_offered(alice_client):
    html = alice_client.get("/programs/tools/web_lookup/", **HX).content.decode()
    assert 'data-testid="tool-why"' in html
    assert "L4" in html and MISSING_ENV in html
    assert "&quot;query&quot;" in html
    assert 'data-testid="tool-disable"' not in html
    assert alice_client.get("/programs/tools/nope/").status_code == 404


def test_only_staff_can_disable_a_tool_from_the_page(alice_client):
    denied = alice_client.post("/programs/tools/read_notes/disable/", {"disabled": "1"}, **HX)
    assert denied.status_code == 403
    assert selectors.globally_disabled_names() == set()


def test_staff_disable_triggers_a_refresh_and_drops_the_tool(staff_client, staff_user):
    detail = staff_client.get("/programs/tools/read_notes/", **HX).content.decode()
    assert 'data-testid="tool-disable"' in detail
    response = staff_client.post(
        "/programs/tools/read_notes/disable/", {"disabled": "1", "reason": "broken"}, **HX
    )
    assert response["HX-Trigger"] == "tools-changed"
    html = response.content.decode()
    assert "Not offered: Turned off for everyone by an admin: broken." in html
    assert "<code>L5</code> globally disabled: broken" in html  # the code, kept in a details
    assert selectors.globally_disabled_names() == {"read_notes"}
    resolved = selectors.resolution_for(owner=staff_user, profile_name="default").names
    assert "read_notes" not in resolved
    staff_client.post("/programs/tools/read_notes/disable/", {"disabled": "0"}, **HX)
    assert selectors.globally_disabled_names() == set()


def test_import_a_functions_meta_file(alice, alice_client):
    upload = SimpleUploadedFile(
        "functions_meta.json",
        json.dumps({"profiles": {"safe": ["read_notes"]}, "active": "safe"}).encode(),
        content_type="application/json",
    )
    html = alice_client.post("/programs/import-profiles/", {"file": upload}, **HX).content.decode()
    assert 'data-profile="safe"' in html
    assert selectors.active_profile_name(owner=alice) == "safe"
    broken = SimpleUploadedFile("f.json", b"{not json", content_type="application/json")
    error = alice_client.post("/programs/import-profiles/", {"file": broken}, **HX)
    assert "not valid JSON" in error.content.decode()


def test_without_htmx_a_post_redirects_back(alice_client):
    response = alice_client.post("/programs/new-profile/", {"name": "plain"})
    assert response.status_code == 302
    assert response["Location"].endswith("?profile=plain")


def test_anonymous_is_sent_to_login(client):
    assert client.get("/programs/catalog/").status_code == 302


def test_the_catalog_marks_what_the_selected_profile_holds(alice, alice_client):
    services.profile_create(owner=alice, name="lean", tools=["read_notes"])
    html = alice_client.get("/programs/catalog/?profile=lean", **HX).content.decode()
    assert html.count('data-testid="badge-in-profile"') == 1
    area = alice_client.post("/programs/profiles/lean/tools/add/", {"tool": "web_lookup"}, **HX)
    # After the swap: listeners then read the newly selected profile from the page.
    assert area["HX-Trigger-After-Swap"] == "profile-changed"
    html = alice_client.get("/programs/catalog/?profile=lean", **HX).content.decode()
    assert html.count('data-testid="badge-in-profile"') == 2


def test_a_profile_name_with_spaces_round_trips_through_urls(alice, alice_client):
    response = alice_client.post("/programs/new-profile/", {"name": "my research"})
    assert response["Location"].endswith("?profile=my+research")
    page = alice_client.get(response["Location"]).content.decode()
    assert 'data-profile="my research"' in page
    panel = alice_client.get("/programs/profiles/my%20research/", **HX).content.decode()
    assert 'data-testid="profile-heading">my research<' in panel
