"""Layer 5 removes a tool only when no rule could allow it, and says which rule."""

from __future__ import annotations

import pytest

from openprogram.agent.types import AgentTool
from openprogram.programs import registry
from openprogram.programs.explain_words import plain_reason
from openprogram.programs.policy import resolve_tools
from openprogram.programs.registry import reset_registry
from openprogram.programs.rule_conditions import Condition
from openprogram.programs.rules import PolicySet, Rule


@pytest.fixture
def tools(clean_registry):
    reset_registry()
    for name, asks in (
        ("bash", True),
        ("read", False),
        ("mcp__gh__push", True),
        ("mcp__gh__list", False),
    ):
        registry.register(AgentTool(name=name, description=name, requires_approval=asks))


def _offered(*rules: Rule, **policy) -> set[str]:
    return set(resolve_tools(policy=PolicySet(rules=rules, **policy)).names)


def test_a_name_only_deny_removes_the_tool_and_explain_names_the_rule(tools):
    resolution = resolve_tools(
        policy=PolicySet(rules=(Rule("bash", "deny", scope="group", group="interns", id=3),))
    )
    assert "bash" not in resolution.names and "read" in resolution.names
    row = resolution.decision("bash")
    assert (
        row.layer == "L5" and row.reason == "denied by policy: group 'interns' rule #3: deny bash"
    )
    assert plain_reason(row.layer, row.reason).startswith("Not allowed for you by the team policy")


def test_a_glob_deny_removes_every_matching_tool(tools):
    assert _offered(Rule("mcp__gh__*", "deny")) == {"bash", "read"}


def test_a_conditional_rule_never_removes_a_tool(tools):
    deny_rm = Rule("bash", "deny", condition=Condition("command", ("rm*",)))
    assert "bash" in _offered(deny_rm)


def test_a_deny_a_narrower_rule_may_relax_keeps_the_tool(tools):
    org = Rule("bash", "deny", may_be_relaxed=True)
    git = Rule("bash", "allow", scope="group", condition=Condition("command", ("git status",)))
    assert "bash" in _offered(org, git)
    assert "bash" not in _offered(Rule("bash", "deny"), git)  # not relaxable: gone


def test_a_user_rule_cannot_bring_back_a_group_deny(tools):
    group = Rule("bash", "deny", scope="group", may_be_relaxed=True)
    user = Rule("bash", "allow", scope="user")
    assert "bash" not in _offered(group, user)


def test_deny_by_default_keeps_only_what_a_rule_could_allow(tools):
    offered = _offered(
        Rule("read", "allow"),
        Rule("bash", "ask", condition=Condition("command", ("ls*",))),
        deny_by_default=True,
    )
    assert offered == {"read", "bash"}
    resolution = resolve_tools(policy=PolicySet(deny_by_default=True))
    assert resolution.names == []
    assert "denied by default" in resolution.decision("read").reason


def test_the_same_policy_is_answered_from_the_cache(tools):
    policy = PolicySet(rules=(Rule("bash", "deny", id=1),))
    first = resolve_tools(policy=policy)
    again = resolve_tools(policy=PolicySet(rules=(Rule("bash", "deny", id=1),)))
    assert first.names == again.names
    registry.register(AgentTool(name="bash2", description="x"))
    later = resolve_tools(policy=PolicySet(rules=(Rule("bash*", "deny", id=1),)))
    assert "bash2" not in later.names  # a tool registered later is covered
