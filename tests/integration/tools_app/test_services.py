"""Tool profiles, the active profile, global disables, agent profiles, import, tokens."""

from __future__ import annotations

import pytest

from accounts.services import api_token_authenticate
from core.api_errors import ConflictError, NotFoundError, UnprocessableError
from tests.integration.tools_app.conftest import TOOL_NAMES
from tools_app import agent_profile_services, selectors, services
from tools_app.models import Tool, ToolProfile

pytestmark = pytest.mark.django_db


def test_a_new_profile_copies_every_exposed_tool(alice):
    profile = services.profile_create(owner=alice, name="research")
    assert profile.tools == TOOL_NAMES
    assert "hidden_helper" not in profile.tools


def test_it_rejects_a_duplicate_name_case_insensitively(alice):
    services.profile_create(owner=alice, name="Research")
    with pytest.raises(ConflictError, match="'research'"):
        services.profile_create(owner=alice, name="research")


def test_two_users_may_use_the_same_profile_name(alice, bob):
    services.profile_create(owner=alice, name="research")
    services.profile_create(owner=bob, name="research")
    assert ToolProfile.objects.filter(name="research").count() == 2


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "required"),
        ("   ", "required"),
        ("x" * 65, "too long"),
        ("-dash-first", "must start with a letter or digit"),
        ("semi;colon", "may use letters"),
        ("default", "reserved"),
        ("Default", "reserved"),
        ("none", "reserved"),
    ],
)
def test_it_rejects_an_invalid_profile_name(alice, name, message):
    with pytest.raises(UnprocessableError, match=message):
        services.profile_create(owner=alice, name=name)
    assert not ToolProfile.objects.exists()


def test_default_cannot_be_renamed_edited_or_deleted(alice):
    for action in (
        lambda: services.profile_rename(owner=alice, name="default", new_name="mine"),
        lambda: services.profile_set_tools(owner=alice, name="default", tools=[]),
        lambda: services.profile_remove_tool(owner=alice, name="default", tool="read_notes"),
        lambda: services.profile_add_tool(owner=alice, name="default", tool="read_notes"),
        lambda: services.profile_delete(owner=alice, name="default"),
    ):
        with pytest.raises(UnprocessableError, match="'default' profile is built in"):
            action()


def test_remove_then_add_a_tool(alice):
    services.profile_create(owner=alice, name="lean")
    services.profile_remove_tool(owner=alice, name="lean", tool="write_notes")
    assert "write_notes" not in selectors.profile_tool_names(owner=alice, name="lean")
    services.profile_add_tool(owner=alice, name="lean", tool="write_notes")
    assert selectors.profile_tool_names(owner=alice, name="lean")[-1] == "write_notes"


def test_adding_an_unregistered_or_present_tool_is_refused(alice):
    services.profile_create(owner=alice, name="lean")
    with pytest.raises(NotFoundError, match="'nope'"):
        services.profile_add_tool(owner=alice, name="lean", tool="nope")
    with pytest.raises(ConflictError, match="already in profile"):
        services.profile_add_tool(owner=alice, name="lean", tool="read_notes")
    with pytest.raises(NotFoundError, match="not in profile"):
        services.profile_remove_tool(owner=alice, name="lean", tool="nope")


def test_bob_cannot_touch_alices_profile(alice, bob):
    services.profile_create(owner=alice, name="mine")
    with pytest.raises(NotFoundError):
        services.profile_remove_tool(owner=bob, name="mine", tool="read_notes")
    with pytest.raises(NotFoundError):
        services.profile_delete(owner=bob, name="mine")
    with pytest.raises(NotFoundError):
        selectors.profile_tool_names(owner=bob, name="mine")
    assert selectors.profile_tool_names(owner=alice, name="mine") == TOOL_NAMES


def test_rename_carries_the_active_choice_and_agent_profiles_along(alice):
    services.profile_create(owner=alice, name="old")
    services.profile_activate(owner=alice, name="old")
    agent = agent_profile_services.agent_profile_create(
        owner=alice, name="bot", tools={"toolset": "old"}
    )
    services.profile_rename(owner=alice, name="old", new_name="new")
    assert selectors.active_profile_name(owner=alice) == "new"
    agent.refresh_from_db()
    assert agent.tools["toolset"] == "new"


def test_rename_to_a_taken_name_conflicts(alice):
    services.profile_create(owner=alice, name="one")
    services.profile_create(owner=alice, name="two")
    with pytest.raises(ConflictError):
        services.profile_rename(owner=alice, name="one", new_name="TWO")


def test_deleting_the_active_profile_falls_back_to_default(alice):
    services.profile_create(owner=alice, name="temp")
    services.profile_activate(owner=alice, name="temp")
    services.profile_delete(owner=alice, name="temp")
    assert selectors.active_profile_name(owner=alice) == "default"


def test_a_profile_used_by_an_agent_profile_cannot_be_deleted(alice):
    services.profile_create(owner=alice, name="base")
    agent_profile_services.agent_profile_create(owner=alice, name="bot", tools={"toolset": "base"})
    with pytest.raises(ConflictError, match="'bot'"):
        services.profile_delete(owner=alice, name="base")
    assert ToolProfile.objects.filter(name="base").exists()


def test_duplicate_copies_tools_and_default_duplicates_to_all(alice):
    services.profile_create(owner=alice, name="lean", tools=["read_notes"])
    copy = services.profile_duplicate(owner=alice, name="lean", new_name="lean2")
    assert copy.tools == ["read_notes"]
    everything = services.profile_duplicate(owner=alice, name="default", new_name="all")
    assert everything.tools == TOOL_NAMES


def test_set_tools_deduplicates_and_keeps_unknown_names(alice):
    services.profile_create(owner=alice, name="p")
    row = services.profile_set_tools(
        owner=alice, name="p", tools=["read_notes", "gone_tool", "read_notes"]
    )
    assert row.tools == ["read_notes", "gone_tool"]
    view = selectors.profile_get(owner=alice, name="p")
    assert view.missing == ["gone_tool"]


def test_set_tools_rejects_non_strings_and_unsafe_names(alice):
    services.profile_create(owner=alice, name="p")
    with pytest.raises(UnprocessableError, match="list of tool names"):
        services.profile_set_tools(owner=alice, name="p", tools=["ok", 3])
    with pytest.raises(UnprocessableError, match="'a/b'"):
        services.profile_set_tools(owner=alice, name="p", tools=["a/b"])
    assert selectors.profile_tool_names(owner=alice, name="p") == TOOL_NAMES


def test_a_globally_disabled_tool_stays_listed_and_marked(alice, admin_user):
    services.profile_create(owner=alice, name="p")
    services.tool_disable(name="write_notes", by=admin_user, reason="broken")
    view = selectors.profile_get(owner=alice, name="p")
    assert "write_notes" in view.tools
    assert view.disabled == ["write_notes"]
    assert selectors.globally_disabled_names() == {"write_notes"}
    row = Tool.objects.get(name="write_notes")
    assert (row.disabled_reason, row.disabled_by) == ("broken", admin_user)
    services.tool_enable(name="write_notes")
    assert selectors.globally_disabled_names() == set()
    assert selectors.profile_get(owner=alice, name="p").disabled == []


def test_disabling_an_unknown_tool_is_not_found(admin_user):
    with pytest.raises(NotFoundError, match="'nope'"):
        services.tool_disable(name="nope", by=admin_user, reason="")


def test_activate_an_unknown_profile_is_not_found(alice):
    with pytest.raises(NotFoundError):
        services.profile_activate(owner=alice, name="ghost")


def test_import_creates_updates_and_sets_active(alice):
    services.profile_create(owner=alice, name="safe", tools=["read_notes"])
    result = services.profiles_import(
        owner=alice,
        data={
            "profiles": {
                "default": ["ignored"],
                "safe": ["read_notes", "web_lookup"],
                "research": ["web_lookup", "someday_tool"],
            },
            "active": "research",
        },
    )
    assert result == {"created": ["research"], "updated": ["safe"], "deleted": []}
    assert selectors.profile_tool_names(owner=alice, name="safe") == ["read_notes", "web_lookup"]
    assert selectors.active_profile_name(owner=alice) == "research"


def test_import_replace_deletes_profiles_the_file_does_not_name(alice):
    services.profile_create(owner=alice, name="stale")
    result = services.profiles_import(
        owner=alice, data={"profiles": {"fresh": []}, "active": "default"}, replace=True
    )
    assert result["deleted"] == ["stale"]
    assert selectors.profile_names(owner=alice) == ["default", "fresh"]


@pytest.mark.parametrize(
    "data",
    [
        [],
        {"profiles": []},
        {"profiles": {"ok": ["a"]}, "active": "missing"},
        {"profiles": {"bad;name": []}},
        {"profiles": {"ok": "not a list"}},
        {"profiles": {"Dup": [], "dup": []}},
    ],
)
def test_import_of_bad_data_writes_nothing(alice, data):
    services.profile_create(owner=alice, name="keep", tools=["read_notes"])
    with pytest.raises(UnprocessableError):
        services.profiles_import(owner=alice, data=data)
    assert selectors.profile_names(owner=alice) == ["default", "keep"]
    assert selectors.profile_tool_names(owner=alice, name="keep") == ["read_notes"]


def test_export_then_import_round_trips(alice, bob):
    services.profile_create(owner=alice, name="a", tools=["read_notes"])
    services.profile_create(owner=alice, name="b", tools=["web_lookup", "missing_one"])
    services.profile_activate(owner=alice, name="b")
    exported = selectors.profiles_export(owner=alice)
    assert exported["profiles"]["default"] == TOOL_NAMES
    services.profiles_import(owner=bob, data=exported)
    assert selectors.profiles_export(owner=bob) == exported


def test_api_tokens_are_issued_listed_and_revoked(alice, bob):
    row, clear = services.api_token_issue(owner=alice, name="script")
    assert api_token_authenticate(token=clear) == alice
    assert [t.pk for t in selectors.api_token_list(owner=alice)] == [row.pk]
    assert selectors.api_token_list(owner=bob) == []
    with pytest.raises(NotFoundError):
        services.api_token_revoke(owner=bob, pk=row.pk)
    services.api_token_revoke(owner=alice, pk=row.pk)
    assert api_token_authenticate(token=clear) is None


def test_rename_and_delete_tell_listeners(alice):
    from tools_app.signals import tool_profile_deleted, tool_profile_renamed

    heard: list[tuple] = []

    def on_rename(sender, owner, old_name, new_name, **kwargs):
        heard.append(("renamed", owner, old_name, new_name))

    def on_delete(sender, owner, name, **kwargs):
        heard.append(("deleted", owner, name))

    tool_profile_renamed.connect(on_rename)
    tool_profile_deleted.connect(on_delete)
    try:
        services.profile_create(owner=alice, name="a")
        services.profile_rename(owner=alice, name="a", new_name="b")
        services.profile_delete(owner=alice, name="b")
    finally:
        tool_profile_renamed.disconnect(on_rename)
        tool_profile_deleted.disconnect(on_delete)
    assert heard == [("renamed", alice, "a", "b"), ("deleted", alice, "b")]
