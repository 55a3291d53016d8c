"""The tools API: every route for alice, bob, staff and anonymous; errors as JSON."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from tests.integration.tools_app.conftest import MISSING_ENV, TOOL_NAMES
from tools_app import agent_profile_services, services

pytestmark = pytest.mark.django_db


def _call(client: Client, method: str, path: str, body: dict | None = None, **extra):
    kwargs = {"content_type": "application/json", **extra}
    if body is not None:
        kwargs["data"] = json.dumps(body)
    return getattr(client, method.lower())(path, **kwargs)


@pytest.fixture
def alices_things(alice):
    services.profile_create(owner=alice, name="mine", tools=["read_notes", "write_notes"])
    agent = agent_profile_services.agent_profile_create(owner=alice, name="bot")
    token, _ = services.api_token_issue(owner=alice, name="script")
    return {"agent": agent.pk, "token": token.pk}


# (method, path, body, alice's status) — paths may name alice's objects.
ROUTES = [
    ("GET", "/api/tools", None, 200),
    ("GET", "/api/tools/read_notes", None, 200),
    ("GET", "/api/profiles", None, 200),
    ("POST", "/api/profiles", {"name": "new"}, 201),
    ("GET", "/api/profiles/export", None, 200),
    ("POST", "/api/profiles/import", {"profiles": {"imp": ["read_notes"]}}, 200),
    ("GET", "/api/profiles/mine", None, 200),
    ("PATCH", "/api/profiles/mine", {"tools": ["read_notes"]}, 200),
    ("POST", "/api/profiles/mine/tools", {"tool": "web_lookup"}, 200),
    ("DELETE", "/api/profiles/mine/tools/write_notes", None, 200),
    ("POST", "/api/profiles/mine/duplicate", {"name": "copy"}, 201),
    ("DELETE", "/api/profiles/mine", None, 204),
    ("POST", "/api/resolve", {"profile": "mine"}, 200),
    ("GET", "/api/agent-profiles", None, 200),
    ("POST", "/api/agent-profiles", {"name": "helper"}, 201),
    ("GET", "/api/agent-profiles/{agent}", None, 200),
    ("PATCH", "/api/agent-profiles/{agent}", {"model": "offline"}, 200),
    ("DELETE", "/api/agent-profiles/{agent}", None, 204),
    ("GET", "/api/tokens", None, 200),
    ("POST", "/api/tokens", {"name": "ci"}, 201),
    ("DELETE", "/api/tokens/{token}", None, 204),
    ("PUT", "/api/tools/read_notes/disable", {"reason": "x"}, 403),
]
# Routes naming one of alice's objects: bob must get 404, never 403.
ALICES_OBJECTS = {
    "/api/profiles/mine",
    "/api/profiles/mine/tools",
    "/api/profiles/mine/tools/write_notes",
    "/api/profiles/mine/duplicate",
    "/api/agent-profiles/{agent}",
    "/api/tokens/{token}",
}


@pytest.mark.parametrize(("method", "path", "body", "status"), ROUTES)
def test_anonymous_gets_401_everywhere(client, alices_things, method, path, body, status):
    response = _call(client, method, path.format(**alices_things), body)
    assert response.status_code == 401
    assert "Authentication required" in response.json()["detail"]


@pytest.mark.parametrize(("method", "path", "body", "status"), ROUTES)
def test_alice_can_use_every_route_on_her_things(
    client, alice, alices_things, method, path, body, status
):
    client.force_login(alice)
    response = _call(client, method, path.format(**alices_things), body)
    assert response.status_code == status, response.content


@pytest.mark.parametrize(
    ("method", "path", "body", "status"), [r for r in ROUTES if r[1] in ALICES_OBJECTS]
)
def test_bob_gets_404_for_alices_things(client, bob, alices_things, method, path, body, status):
    client.force_login(bob)
    response = _call(client, method, path.format(**alices_things), body)
    assert response.status_code == 404
    assert response.json()["detail"]


def test_bob_cannot_see_alices_profiles_in_lists_or_resolve(client, bob, alices_things):
    client.force_login(bob)
    assert [p["name"] for p in client.get("/api/profiles").json()] == ["default"]
    assert _call(client, "POST", "/api/resolve", {"profile": "mine"}).status_code == 404


def test_staff_disables_a_tool_and_it_leaves_the_resolved_set(client, staff_user, alice):
    client.force_login(alice)
    before = _call(client, "POST", "/api/resolve", {"profile": "default"}).json()
    assert "read_notes" in before["tools"]
    client.force_login(staff_user)
    response = _call(client, "PUT", "/api/tools/read_notes/disable", {"reason": "broken"})
    assert response.status_code == 200
    assert response.json()["disabled"] is True
    client.force_login(alice)
    after = _call(client, "POST", "/api/resolve", {"profile": "default"}).json()
    assert "read_notes" not in after["tools"]
    entry = next(e for e in after["explain"] if e["name"] == "read_notes")
    # The admin's reason travels with the trace, so the chat and the API can show it.
    assert (entry["layer"], entry["reason"]) == ("L5", "globally disabled: broken")
    assert entry["words"] == "Turned off for everyone by an admin: broken"
    client.force_login(staff_user)
    _call(client, "PUT", "/api/tools/read_notes/disable", {"disabled": False})
    client.force_login(alice)
    again = _call(client, "POST", "/api/resolve", {"profile": "default"}).json()
    assert "read_notes" in again["tools"]


def test_default_is_immutable_through_the_api(alice_client):
    for method, path, body in [
        ("PATCH", "/api/profiles/default", {"name": "renamed"}),
        ("PATCH", "/api/profiles/default", {"tools": []}),
        ("DELETE", "/api/profiles/default", None),
        ("POST", "/api/profiles/default/tools", {"tool": "read_notes"}),
        ("DELETE", "/api/profiles/default/tools/read_notes", None),
    ]:
        response = _call(alice_client, method, path, body)
        assert response.status_code == 422, (method, path)
        assert "'default' profile is built in" in response.json()["detail"]
    assert _call(alice_client, "POST", "/api/profiles", {"name": "default"}).status_code == 422


def test_duplicate_and_invalid_names_are_409_and_422(alice_client):
    assert _call(alice_client, "POST", "/api/profiles", {"name": "x"}).status_code == 201
    dup = _call(alice_client, "POST", "/api/profiles", {"name": "X"})
    assert dup.status_code == 409
    assert "'X'" in dup.json()["detail"]
    assert _call(alice_client, "POST", "/api/profiles", {"name": ""}).status_code == 422
    assert _call(alice_client, "POST", "/api/profiles", {"name": "a" * 100}).status_code == 422
    missing_field = _call(alice_client, "POST", "/api/profiles", {})
    assert missing_field.status_code == 422
    assert missing_field.json()["errors"]


def test_a_new_profile_starts_with_every_tool_and_reports_its_cost(alice_client):
    created = _call(alice_client, "POST", "/api/profiles", {"name": "p"}).json()
    assert created["tools"] == TOOL_NAMES
    full = created["cost"]
    assert full["tool_count"] >= 3
    assert full["deferred_count"] == 1
    assert full["prompt_tokens"] > 0
    assert full["deferral_saved_tokens"] > 0
    lean = _call(alice_client, "PATCH", "/api/profiles/p", {"tools": ["read_notes"]}).json()
    assert lean["cost"]["tool_count"] == 1
    assert lean["cost"]["prompt_tokens"] < full["prompt_tokens"]
    assert lean["cost"]["deferral_saved_tokens"] == 0


def test_rename_and_activate_in_one_patch(alice_client):
    _call(alice_client, "POST", "/api/profiles", {"name": "p"})
    body = _call(alice_client, "PATCH", "/api/profiles/p", {"name": "q", "active": True}).json()
    assert (body["name"], body["is_active"]) == ("q", True)
    assert _call(alice_client, "GET", "/api/profiles/p").status_code == 404


def test_tool_detail_explains_why_it_is_not_offered(alice_client):
    body = alice_client.get("/api/tools/web_lookup").json()
    assert body["offered"] is False
    assert body["explain"]["layer"] == "L4"
    assert MISSING_ENV in body["explain"]["reason"]
    assert body["parameters"]["required"] == ["query"]
    assert body["schema_tokens"] > 0
    assert alice_client.get("/api/tools/nope").status_code == 404


def test_tool_list_filters_and_reports_unavailability(alice_client):
    assert [t["name"] for t in alice_client.get("/api/tools?search=notes").json()] == [
        "read_notes",
        "write_notes",
    ]
    assert [t["name"] for t in alice_client.get("/api/tools?state=unavailable").json()] == [
        "web_lookup"
    ]
    assert [t["name"] for t in alice_client.get("/api/tools?state=deferred").json()] == [
        "mcp__demo__echo"
    ]
    assert alice_client.get("/api/tools?state=bogus").status_code == 422
    hidden = [t["name"] for t in alice_client.get("/api/tools").json()]
    assert "hidden_helper" not in hidden


def test_resolve_applies_the_composer_toggles_and_agent_profile(alice, alice_client):
    off = _call(alice_client, "POST", "/api/resolve", {"tools_on": False}).json()
    assert off["tools"] == []
    assert off["cost"]["tool_count"] == 0
    agent = agent_profile_services.agent_profile_create(
        owner=alice, name="bot", tools={"allowed": ["read_notes"]}
    )
    capped = _call(alice_client, "POST", "/api/resolve", {"agent_profile": agent.pk}).json()
    assert capped["tools"] == ["read_notes"]
    deferred = _call(alice_client, "POST", "/api/resolve", {}).json()
    assert deferred["deferred"] == ["mcp__demo__echo"]


def test_export_import_round_trip_through_the_api(client, alice, bob):
    client.force_login(alice)
    _call(client, "POST", "/api/profiles", {"name": "a"})
    _call(client, "PATCH", "/api/profiles/a", {"tools": ["read_notes", "gone"], "active": True})
    exported = client.get("/api/profiles/export").json()
    assert exported == {
        "profiles": {"default": TOOL_NAMES, "a": ["read_notes", "gone"]},
        "active": "a",
    }
    client.force_login(bob)
    result = _call(client, "POST", "/api/profiles/import", exported).json()
    assert result["created"] == ["a"]
    assert client.get("/api/profiles/export").json() == exported
    bad = _call(client, "POST", "/api/profiles/import", {"profiles": {"b": []}, "active": "zzz"})
    assert bad.status_code == 422


def test_bearer_token_works_without_csrf_and_session_post_needs_csrf(alice):
    _, clear = services.api_token_issue(owner=alice, name="script")
    strict = Client(enforce_csrf_checks=True)
    by_token = _call(
        strict, "POST", "/api/profiles", {"name": "t"}, HTTP_AUTHORIZATION=f"Bearer {clear}"
    )
    assert by_token.status_code == 201
    strict.force_login(alice)
    no_csrf = _call(strict, "POST", "/api/profiles", {"name": "u"})
    assert no_csrf.status_code in (401, 403)
    bad_token = _call(Client(), "GET", "/api/profiles", HTTP_AUTHORIZATION="Bearer nope")
    assert bad_token.status_code == 401


def test_token_creation_returns_the_clear_token_once(alice_client):
    created = _call(alice_client, "POST", "/api/tokens", {"name": "ci"}).json()
    assert created["token"].startswith("op_")
    listed = alice_client.get("/api/tokens").json()
    assert [t["id"] for t in listed] == [created["id"]]
    assert "token" not in listed[0]


def test_a_patch_that_fails_changes_nothing(alice, alice_client):
    services.profile_create(owner=alice, name="p", tools=["read_notes"])
    services.profile_create(owner=alice, name="taken")
    response = _call(alice_client, "PATCH", "/api/profiles/p", {"tools": [], "name": "taken"})
    assert response.status_code == 409
    assert alice_client.get("/api/profiles/p").json()["tools"] == ["read_notes"]


def test_the_openapi_schema_documents_every_route(alice_client):
    response = alice_client.get("/api/openapi.json")
    assert response.status_code == 200
    paths = set(response.json()["paths"])
    for _, path, _, _ in ROUTES:
        assert (
            path.replace("{agent}", "{pk}")
            .replace("{token}", "{pk}")
            .replace("mine", "{name}")
            .replace("read_notes", "{name}")
            .replace("write_notes", "{tool}")
            in paths
        )
