"""The seam the chat uses: profile lists, turn inputs, and resolution through the framework."""

from __future__ import annotations

import pytest

from core.api_errors import NotFoundError, UnprocessableError
from openprogram.programs.rules import PolicySet
from tests.integration.tools_app.conftest import MISSING_ENV, TOOL_NAMES
from tools_app import agent_profile_services, selectors, services

pytestmark = pytest.mark.django_db


def test_profile_list_puts_the_virtual_default_first(alice):
    services.profile_create(owner=alice, name="zeta", tools=["read_notes"])
    services.profile_create(owner=alice, name="alpha", tools=[])
    views = selectors.profile_list(owner=alice)
    assert [(v.name, v.is_default) for v in views] == [
        ("default", True),
        ("alpha", False),
        ("zeta", False),
    ]
    assert views[0].tools == TOOL_NAMES
    assert views[0].is_active


def test_profile_tool_names_is_none_for_default_and_404_for_others(alice, bob):
    services.profile_create(owner=bob, name="bobs")
    assert selectors.profile_tool_names(owner=alice, name="default") is None
    with pytest.raises(NotFoundError, match="'bobs'"):
        selectors.profile_tool_names(owner=alice, name="bobs")


def test_turn_inputs_for_a_plain_profile(alice, admin_user):
    services.profile_create(owner=alice, name="lean", tools=["read_notes"])
    services.tool_disable(name="write_notes", by=admin_user, reason="")
    inputs = selectors.turn_resolution_inputs(owner=alice, profile_name="lean")
    assert inputs == {
        "profile_tools": ["read_notes"],
        "toolset": None,
        "allow": None,
        "deny": None,
        "disabled": {"write_notes": ""},  # name → the admin's reason (none given)
        "system_prompt": None,
        "model": None,
        "named_profiles": {"lean": ["read_notes"]},
        "policy": PolicySet(),  # no team policy rules yet (tools_app.policy)
    }


def test_turn_inputs_use_the_active_profile_when_none_is_named(alice):
    services.profile_create(owner=alice, name="lean", tools=["read_notes"])
    services.profile_activate(owner=alice, name="lean")
    assert selectors.turn_resolution_inputs(owner=alice, profile_name=None)["profile_tools"] == [
        "read_notes"
    ]


def test_turn_inputs_carry_an_agent_profile(alice):
    agent = agent_profile_services.agent_profile_create(
        owner=alice,
        name="bot",
        model="gpt-4o-mini",
        system_prompt="You are terse.",
        tools={"toolset": "notes", "disabled": ["write_notes"], "allowed": []},
    )
    inputs = selectors.turn_resolution_inputs(
        owner=alice, profile_name="default", agent_profile_id=agent.pk
    )
    assert inputs["toolset"] == "notes"
    assert inputs["deny"] == ["write_notes"]
    assert inputs["allow"] is None
    assert (inputs["model"], inputs["system_prompt"]) == ("gpt-4o-mini", "You are terse.")


def test_another_users_agent_profile_is_not_found(alice, bob):
    agent = agent_profile_services.agent_profile_create(owner=bob, name="bot")
    with pytest.raises(NotFoundError):
        selectors.turn_resolution_inputs(owner=alice, profile_name=None, agent_profile_id=agent.pk)


def test_resolution_drops_a_globally_disabled_tool_from_a_profile(alice, admin_user):
    services.profile_create(owner=alice, name="p", tools=["read_notes", "write_notes"])
    assert selectors.resolution_for(owner=alice, profile_name="p").names == [
        "read_notes",
        "write_notes",
    ]
    services.tool_disable(name="write_notes", by=admin_user, reason="flaky")
    resolution = selectors.resolution_for(owner=alice, profile_name="p")
    assert resolution.names == ["read_notes"]
    decision = resolution.decision("write_notes")
    assert (decision.layer, decision.reason) == ("L5", "globally disabled: flaky")


def test_resolution_explains_a_missing_env_as_layer_four(alice):
    decision = selectors.resolution_for(owner=alice, profile_name="default").decision("web_lookup")
    assert not decision.offered
    assert decision.layer == "L4"
    assert MISSING_ENV in decision.reason


def test_a_missing_tool_in_a_profile_is_a_warning_not_an_error(alice):
    services.profile_create(owner=alice, name="p", tools=["read_notes", "gone_tool"])
    resolution = selectors.resolution_for(owner=alice, profile_name="p")
    assert resolution.names == ["read_notes"]
    assert any("gone_tool" in w for w in resolution.warnings)


def test_per_turn_toggles_map_to_framework_layers(alice):
    off = selectors.resolution_for(owner=alice, profile_name="default", tools_on=False)
    assert off.names == []
    no_web = selectors.resolution_for(
        owner=alice, profile_name="default", web_search_on=False, source=None
    )
    assert "read_notes" in no_web.names


def test_agent_enabled_adds_tools_back_to_its_toolset(alice):
    agent = agent_profile_services.agent_profile_create(
        owner=alice, name="bot", tools={"toolset": "notes", "enabled": ["mcp__demo__echo"]}
    )
    names = selectors.resolution_for(
        owner=alice, profile_name="default", agent_profile_id=agent.pk
    ).names
    assert set(names) == {"read_notes", "write_notes", "mcp__demo__echo", "tool_search"}


def test_agent_allowed_caps_and_disabled_denies(alice):
    agent = agent_profile_services.agent_profile_create(
        owner=alice,
        name="bot",
        tools={"allowed": ["read_notes", "write_notes"], "disabled": ["write_notes"]},
    )
    names = selectors.resolution_for(
        owner=alice, profile_name="default", agent_profile_id=agent.pk
    ).names
    assert names == ["read_notes"]


def test_an_agent_toolset_that_vanished_is_a_clear_422(alice):
    services.profile_create(owner=alice, name="base")
    agent = agent_profile_services.agent_profile_create(
        owner=alice, name="bot", tools={"toolset": "base"}
    )
    agent.tools = {**agent.tools, "toolset": "deleted_meanwhile"}
    agent.save()
    with pytest.raises(UnprocessableError, match="'deleted_meanwhile'"):
        selectors.resolution_for(owner=alice, profile_name=None, agent_profile_id=agent.pk)


def test_tool_list_filters_by_search_source_toolset_and_state(admin_user):
    assert [t.name for t in selectors.tool_list(search="NOTE")] == ["read_notes", "write_notes"]
    assert [t.name for t in selectors.tool_list(source="mcp")] == ["mcp__demo__echo"]
    assert [t.name for t in selectors.tool_list(toolset="notes")] == ["read_notes", "write_notes"]
    services.tool_disable(name="read_notes", by=admin_user, reason="")
    assert [t.name for t in selectors.tool_list(state="disabled")] == ["read_notes"]
    assert "read_notes" not in [t.name for t in selectors.tool_list(state="enabled")]


def test_the_default_profile_is_the_frameworks_default_tools():
    from openprogram.programs import DEFAULT_TOOLS

    names = selectors.exposed_tool_names()
    assert set(names) == set(DEFAULT_TOOLS)
    assert "tool_search" not in names
