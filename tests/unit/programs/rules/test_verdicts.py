"""The verdict algorithm of docs/policy.md, one step at a time."""

from __future__ import annotations

import pytest

from openprogram.agent.types import AgentTool
from openprogram.programs.rule_conditions import Condition
from openprogram.programs.rules import PolicySet, Rule, decide


def _tool(name: str = "bash", *, asks: bool = True, source: str = "builtin") -> AgentTool:
    return AgentTool(name=name, description=name, requires_approval=asks, source=source)


BASH = _tool("bash", asks=True)
READ = _tool("read", asks=False)
GIT_STATUS = Condition("command", ("git status*",))


def _decide(*rules: Rule, tool: AgentTool = BASH, args=None, **policy):
    return decide(PolicySet(rules=tuple(rules), **policy), tool, args or {"command": "ls"})


# Step 1-2: no matching rule: the tool's default.
def test_with_no_rules_a_tool_that_requires_approval_asks_and_others_run():
    assert _decide().verdict == "ask"
    assert _decide(tool=READ, args={"path": "a"}).verdict == "allow"
    assert decide(None, BASH, {}).verdict == "ask"
    assert _decide().source == "default" and _decide().rule is None


def test_a_rule_for_another_tool_or_whose_condition_fails_is_not_collected():
    other = Rule("read", "deny", id=1)
    conditional = Rule("bash", "deny", condition=Condition("command", ("rm*",)), id=2)
    decision = _decide(other, conditional, args={"command": "ls"})
    assert decision.verdict == "ask"
    assert [c.outcome for c in decision.considered] == ["condition does not hold"]


def test_deny_by_default_denies_what_no_rule_allows():
    assert _decide(deny_by_default=True).verdict == "deny"
    assert _decide(tool=READ, deny_by_default=True).verdict == "deny"
    allowed = _decide(Rule("read", "allow", id=3), tool=READ, deny_by_default=True)
    assert allowed.verdict == "allow" and allowed.rule.id == 3


def test_a_destructive_mcp_tool_asks_by_default():
    from openprogram.mcp.tool import MCPTool

    bare = MCPTool(
        caller=None,
        server="s",
        remote_name="x",
        description="",
        input_schema=None,
        defer=False,
        timeout=5,
    )
    assert decide(None, bare, {}).verdict == "ask"


# Step 3: within one scope the most restrictive wins, several groups included.
def test_within_one_scope_deny_beats_ask_beats_allow():
    rules = [Rule("bash", "allow", id=1), Rule("bash", "deny", id=2), Rule("bash", "ask", id=3)]
    assert _decide(*rules).rule.id == 2
    assert _decide(rules[0], rules[2]).rule.id == 3


def test_two_groups_of_one_user_are_one_scope():
    engineers = Rule("bash", "allow", scope="group", group="engineers", id=1)
    interns = Rule("bash", "deny", scope="group", group="interns", id=2)
    decision = _decide(engineers, interns)
    assert decision.verdict == "deny" and "interns" in decision.words
    outcomes = {c.rule.id: c.outcome for c in decision.considered}
    assert outcomes == {2: "decides", 1: "outweighed in its scope"}


# Step 4: broad to narrow; relaxing only where marked "may be relaxed".
def test_a_group_rule_relaxes_the_tools_default_ask_for_one_command():
    rule = Rule("bash", "allow", scope="group", group="eng", condition=GIT_STATUS, id=5)
    assert _decide(rule, args={"command": "git status --short"}).verdict == "allow"
    assert _decide(rule, args={"command": "git push"}).verdict == "ask"


def test_a_narrower_scope_may_always_restrict():
    org = Rule("bash", "allow", id=1)
    user = Rule("bash", "deny", scope="user", id=2)
    assert _decide(org, user).verdict == "deny"


def test_a_narrower_allow_cannot_relax_a_broader_rule_not_marked_relaxable():
    org = Rule("bash", "deny", id=1)
    group = Rule("bash", "allow", scope="group", group="eng", id=2)
    decision = _decide(org, group)
    assert decision.verdict == "deny" and decision.rule.id == 1
    assert "not relaxed" in {c.rule.id: c.outcome for c in decision.considered}[2]


def test_a_narrower_allow_relaxes_a_broader_rule_marked_relaxable():
    org = Rule("bash", "deny", may_be_relaxed=True, id=1)
    group = Rule("bash", "allow", scope="group", group="eng", id=2)
    assert _decide(org, group).verdict == "allow"


def test_a_floor_fixed_broader_holds_through_a_relaxable_middle_rule():
    org = Rule("bash", "ask", id=1)  # not relaxable: nothing below ask
    group = Rule("bash", "deny", scope="group", may_be_relaxed=True, id=2)
    user = Rule("bash", "allow", scope="user", id=3)
    decision = _decide(org, group, user)
    assert decision.verdict == "deny" and decision.rule.id == 2


def test_a_user_rule_relaxes_the_default_ask_but_never_a_deny():
    user = Rule("bash", "allow", scope="user", condition=GIT_STATUS, id=9)
    assert _decide(user, args={"command": "git status"}).verdict == "allow"
    org_deny = Rule("bash", "deny", may_be_relaxed=True, id=1)
    assert _decide(org_deny, user, args={"command": "git status"}).verdict == "deny"
    assert _decide(user, args={"command": "git status"}, deny_by_default=True).verdict == "deny"


def test_a_user_rule_cannot_relax_a_non_relaxable_ask():
    org = Rule("bash", "ask", id=1)
    user = Rule("bash", "allow", scope="user", id=2)
    decision = _decide(org, user)
    assert decision.verdict == "ask" and not decision.user_may_allow


# Step 5 and who may relax what.
def test_always_ask_beats_every_allow_and_forbids_user_relaxing():
    org = Rule("read", "allow", id=1)
    decision = _decide(org, tool=READ, args={"path": "a"}, always_ask=("read",))
    assert decision.verdict == "ask" and decision.source == "mark"
    assert not decision.user_may_allow
    user = Rule("bash", "allow", scope="user", id=2)
    assert _decide(user, always_ask=("ba*",)).verdict == "ask"


def test_user_may_allow_only_where_the_ask_is_relaxable():
    assert _decide().user_may_allow
    assert not _decide(Rule("bash", "ask", id=1)).user_may_allow
    assert _decide(Rule("bash", "ask", may_be_relaxed=True, id=1)).user_may_allow
    assert not _decide(tool=READ, args={"path": "a"}).user_may_allow  # allow: nothing to relax


def test_glob_tool_patterns_cover_tools_that_appear_later():
    later = _tool("mcp__github__create_issue", asks=False, source="mcp")
    rule = Rule("mcp__github__*", "deny", id=4)
    assert _decide(rule, tool=later, args={}).verdict == "deny"


def test_tool_search_is_exempt():
    search = _tool("tool_search", asks=False)
    assert _decide(Rule("*", "deny"), tool=search, args={}).verdict == "allow"


@pytest.mark.parametrize("verdict", ["allow", "ask", "deny"])
def test_the_deciding_rule_is_named_in_words(verdict):
    rule = Rule("bash", verdict, scope="group", group="interns", id=7, reason="policy 4.2")
    decision = _decide(rule)
    assert decision.words == f"group 'interns' rule #7: {verdict} bash (policy 4.2)"
