"""Rules as stored: admin validation, users' saved rules, the simulator, a turn's policy."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from openprogram.agent.types import AgentTool
from openprogram.programs import registry
from tools_app.policy.models import AlwaysAskMark, PolicyRule, PolicySettings
from tools_app.policy.selectors import policy_for_user

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def shell_tools(known_tools):
    registry.register(
        AgentTool(
            name="bash",
            description="Run a command.",
            parameters={"type": "object", "properties": {"command": {"type": "string"}}},
            requires_approval=True,
        )
    )
    registry.register(AgentTool(name="write", description="Write a file."))


@pytest.fixture
def interns(alice):
    group = Group.objects.create(name="interns")
    alice.groups.add(group)
    return group


# --- the admin refuses what the framework refuses, naming the field -------------------------


def _add(admin_client, **fields):
    data = {
        "scope": "org",
        "tool": "bash",
        "verdict": "deny",
        "condition_kind": "",
        "condition_values": "",
        "condition_pointer": "",
        "condition_op": "equals",
        "condition_value": "",
        "reason": "",
        **fields,
    }
    return admin_client.post("/admin/tools_app/policyrule/add/", data)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        (
            {"tool": "write", "condition_kind": "path", "condition_values": "docs/../x"},
            "condition_values",
        ),
        (
            {"tool": "write", "condition_kind": "path", "condition_values": "a**b"},
            "condition_values",
        ),
        ({"condition_kind": "path", "condition_values": "docs/**"}, "condition_kind"),
        (
            {
                "tool": "x",
                "condition_kind": "pointer",
                "condition_pointer": "no-slash",
                "condition_value": "1",
            },
            "condition_pointer",
        ),
        (
            {
                "tool": "x",
                "condition_kind": "pointer",
                "condition_pointer": "/q",
                "condition_op": "matches",
                "condition_value": r"(a)\1",
            },
            "condition_value",
        ),
        ({"tool": "bash; rm"}, "tool"),
        ({"scope": "group"}, "group"),
    ],
)
def test_the_admin_refuses_a_bad_rule_on_its_field_and_saves_nothing(admin_client, fields, field):
    response = _add(admin_client, **fields)
    assert response.status_code == 200  # the form again, with errors
    errors = response.context["adminform"].form.errors
    assert field in errors, errors
    assert PolicyRule.objects.count() == 0


def test_the_admin_saves_a_sound_group_rule(admin_client, interns, admin_user):
    response = _add(
        admin_client,
        scope="group",
        group=interns.pk,
        condition_kind="command",
        condition_values="curl*\nwget*",
        reason="no downloads",
    )
    assert response.status_code == 302
    (row,) = PolicyRule.objects.all()
    assert row.created_by == admin_user
    assert row.as_rule().condition.values == ("curl*", "wget*")


# --- a turn's policy -------------------------------------------------------------------------


def test_a_user_gets_org_rules_their_groups_rules_and_their_own_only(alice, bob, interns):
    PolicyRule.objects.create(scope="org", tool="write", verdict="ask")
    PolicyRule.objects.create(scope="group", group=interns, tool="bash", verdict="deny")
    PolicyRule.objects.create(scope="user", user=alice, tool="bash", verdict="allow")
    PolicyRule.objects.create(scope="user", user=bob, tool="write", verdict="allow")
    AlwaysAskMark.objects.create(tool="mcp__*")
    PolicySettings.objects.create(deny_by_default=True)
    policy = policy_for_user(user=alice)
    assert [(r.scope, r.tool, r.verdict) for r in policy.rules] == [
        ("org", "write", "ask"),
        ("group", "bash", "deny"),
        ("user", "bash", "allow"),
    ]
    assert policy.rules[1].group == "interns"
    assert policy.always_ask == ("mcp__*",) and policy.deny_by_default
    assert [r.tool for r in policy_for_user(user=bob).rules] == ["write", "write"]


def test_the_turns_resolution_removes_what_the_policy_denies_and_says_why(alice, interns):
    from tools_app.resolution import resolve_inputs
    from tools_app.selectors import turn_resolution_inputs

    PolicyRule.objects.create(
        scope="group", group=interns, tool="bash", verdict="deny", reason="interns"
    )
    inputs = turn_resolution_inputs(owner=alice, profile_name="default")
    resolution = resolve_inputs(inputs)
    assert "bash" not in resolution.names and "write" in resolution.names
    rule = PolicyRule.objects.get()
    expected = f"denied by policy: group 'interns' rule #{rule.pk}: deny bash (interns)"
    assert resolution.decision("bash").reason == expected


def test_the_deprecated_setting_is_still_read_with_a_warning(alice, settings):
    settings.CHAT_ALWAYS_ASK_TOOLS = frozenset({"write"})
    with pytest.warns(DeprecationWarning, match="OPENPROGRAM_ALWAYS_ASK_TOOLS"):
        policy = policy_for_user(user=alice)
    assert "write" in policy.always_ask


# --- saved rules through the API ---------------------------------------------------------------


def test_a_user_saves_lists_and_revokes_their_own_rules(alice_client, alice):
    created = alice_client.post(
        "/api/policy/rules", {"rule": "bash: git status"}, content_type="application/json"
    )
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["tool"] == "bash" and body["pattern"] == "git status"
    assert "user rule" in body["words"] and "git status" in body["words"]
    listed = alice_client.get("/api/policy/rules").json()
    assert [r["id"] for r in listed] == [body["id"]]
    assert alice_client.delete(f"/api/policy/rules/{body['id']}").status_code == 204
    assert alice_client.get("/api/policy/rules").json() == []


def test_bob_cannot_see_or_revoke_alices_rules(alice, bob_client):
    row = PolicyRule.objects.create(scope="user", user=alice, tool="bash", verdict="allow")
    assert bob_client.get("/api/policy/rules").json() == []
    assert bob_client.delete(f"/api/policy/rules/{row.pk}").status_code == 404
    assert PolicyRule.objects.filter(pk=row.pk).exists()


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("nope: x", "tool"),
        ("mcp__demo__echo", "tool"),
        ("read_notes: some pattern", "pattern"),
        ("write: ../x/**", "pattern"),
    ],
)
def test_a_bad_saved_rule_is_refused_naming_the_field(alice_client, text, field):
    response = alice_client.post(
        "/api/policy/rules", {"rule": text}, content_type="application/json"
    )
    assert response.status_code == 422
    assert response.json()["detail"].startswith(f"{field}:")
    assert PolicyRule.objects.count() == 0


def test_an_always_ask_tool_cannot_be_saved(alice_client):
    AlwaysAskMark.objects.create(tool="bash")
    response = alice_client.post(
        "/api/policy/rules", {"rule": "bash: ls"}, content_type="application/json"
    )
    assert response.status_code == 422 and "always ask" in response.json()["detail"]


# --- the simulator ------------------------------------------------------------------------------


def _simulate(client, **body):
    return client.post("/api/policy/simulate", body, content_type="application/json")


def test_a_user_simulates_for_themselves_and_sees_every_rule_considered(
    alice_client, alice, interns
):
    git = PolicyRule.objects.create(
        scope="org",
        tool="bash",
        verdict="allow",
        condition_kind="command",
        condition_values="git status*",
    )
    deny = PolicyRule.objects.create(scope="group", group=interns, tool="bash", verdict="deny")
    response = _simulate(alice_client, tool="bash", arguments={"command": "git status"})
    assert response.status_code == 200
    body = response.json()
    assert body["verdict"] == "deny" and body["rule"] == deny.pk
    assert [c["id"] for c in body["considered"]] == [git.pk, deny.pk]
    assert body["offered"] is False and "interns" in body["removed_because"]


def test_only_staff_simulate_for_another_user(alice_client, bob, admin_user):
    from django.test import Client

    assert _simulate(alice_client, user=bob.pk, tool="bash").status_code == 403
    staff = Client()
    staff.force_login(admin_user)
    response = _simulate(staff, user=bob.pk, tool="bash", arguments={"command": "ls"})
    assert response.status_code == 200 and response.json()["verdict"] == "ask"
    assert response.json()["user"] == bob.username


def test_the_simulator_refuses_an_unknown_tool(alice_client):
    assert _simulate(alice_client, tool="nope").status_code == 422
