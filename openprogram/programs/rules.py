"""Policy for a team: allow / ask / deny rules at organisation, group and user scope.

The engine is pure: the web app reads the rules that reach a user into a
:class:`PolicySet` and passes it in; this module decides. How a call's verdict is
reached (:func:`decide`), step by step:

1. Collect the rules whose tool pattern (a name or a glob such as ``mcp__github__*``)
   matches the tool and whose condition (``rule_conditions``) holds for the arguments.
2. The starting point is the tool's default: ask where the tool requires approval
   (``requires_approval``, a destructive MCP tool), else allow; in the organisation's
   "deny by default" mode, deny. With no matching rule, it is the verdict.
3. Within one scope the most restrictive matching rule wins (deny > ask > allow); the
   groups of one user are one scope. Among equally restrictive rules, one not marked
   "may be relaxed" decides.
4. Scopes apply from broad to narrow: organisation, group, user. A narrower verdict as
   restrictive or more replaces the current one. A less restrictive one replaces it
   only where the current deciding rule is marked "may be relaxed", and never below
   a verdict some broader rule fixed without that mark. The tool's default ask and
   the "deny by default" mode may be relaxed by organisation and group rules; a user's
   own rules may relax only an ask (never a deny) and only where the tool is not
   marked "always ask".
5. A tool an admin marked "always ask" is never allowed without asking: an allow
   verdict becomes ask, whichever rule gave it.

``tool_search`` is infrastructure (it only serves tools that passed): no rule applies
to it. :func:`policy_removals` is layer 5's share: the tools no rule could allow for
this user (each with the deciding rule in words); everything conditional is decided
per call in ``call_policy``.
"""

from __future__ import annotations

import fnmatch
import functools
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from openprogram.agent.types import AgentTool
from openprogram.programs.rule_conditions import Condition, condition_matches, condition_problems

__all__ = [
    "RANK",
    "SCOPES",
    "Considered",
    "PolicyDecision",
    "PolicySet",
    "Rule",
    "Scope",
    "Verdict",
    "decide",
    "policy_removals",
    "rule_problems",
    "tool_pattern_matches",
]

Verdict = Literal["allow", "ask", "deny"]
Scope = Literal["org", "group", "user"]
RANK: dict[str, int] = {"allow": 0, "ask": 1, "deny": 2}
SCOPES: tuple[Scope, ...] = ("org", "group", "user")
_EXEMPT = frozenset({"tool_search"})
_GLOB_CHARS = frozenset("*?[")
_TOOL_PATTERN = re.compile(r"^[A-Za-z0-9_.*?\[\]!-]{1,255}$")
_SCOPE_WORDS = {"org": "organisation", "group": "group", "user": "user"}


@dataclass(frozen=True)
class Rule:
    """One rule. ``group`` names the group of a group rule (for the words)."""

    tool: str
    verdict: Verdict
    scope: Scope = "org"
    condition: Condition | None = None
    may_be_relaxed: bool = False
    reason: str = ""
    id: int | str | None = None
    group: str = ""

    def words(self) -> str:
        """The rule in words: ``organisation rule #3: deny bash (interns may not)``."""
        where = f"group {self.group!r}" if self.scope == "group" and self.group else None
        scope = where or _SCOPE_WORDS[self.scope]
        number = f" #{self.id}" if self.id is not None else ""
        condition = f" {self.condition.words()}" if self.condition else ""
        relax = ", may be relaxed" if self.may_be_relaxed else ""
        reason = f" ({self.reason})" if self.reason else ""
        return f"{scope} rule{number}: {self.verdict} {self.tool}{condition}{relax}{reason}"


@dataclass(frozen=True, eq=False)
class PolicySet:
    """The rules that reach one user, the "always ask" marks and the org's mode."""

    rules: tuple[Rule, ...] = ()
    always_ask: tuple[str, ...] = ()
    """Tool names or globs an admin marked "always ask"."""
    deny_by_default: bool = False

    @cached_property
    def key(self) -> tuple[Any, ...]:
        """What decides every verdict: equal keys, equal policies (caches use it)."""
        return (self.rules, self.always_ask, self.deny_by_default)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PolicySet) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)

    def always_asks(self, name: str) -> bool:
        return any(tool_pattern_matches(pattern, name) for pattern in self.always_ask)

    def rules_for(self, name: str) -> tuple[Rule, ...]:
        """The rules whose tool pattern matches ``name``, in order (remembered per name)."""
        found = self._by_tool.get(name)
        if found is None:
            found = tuple(rule for rule in self.rules if tool_pattern_matches(rule.tool, name))
            self._by_tool[name] = found
        return found

    @cached_property
    def _by_tool(self) -> dict[str, tuple[Rule, ...]]:
        return {}


EMPTY_POLICY = PolicySet()


@dataclass(frozen=True)
class Considered:
    """One rule whose tool pattern matched, and what became of it."""

    rule: Rule
    matched: bool
    outcome: str
    """``decides``, ``condition does not hold``, ``outweighed``, ``not relaxed: …``."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule.words(),
            "id": self.rule.id,
            "matched": self.matched,
            "outcome": self.outcome,
        }


@dataclass(frozen=True)
class PolicyDecision:
    verdict: Verdict
    rule: Rule | None
    """The deciding rule; None when the tool's default (or an "always ask" mark) decided."""
    words: str
    """The deciding rule (or default) in words, for errors, cards and the simulator."""
    considered: tuple[Considered, ...] = ()
    user_may_allow: bool = False
    """An ask a user's own "always allow" may relax (and a per-chat grant may cover)."""
    source: Literal["default", "rule", "mark", "exempt"] = "default"
    """What decided: the tool's default, a rule, an "always ask" mark, or the exemption."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "rule": self.rule.id if self.rule else None,
            "words": self.words,
            "considered": [c.as_dict() for c in self.considered],
            "user_may_allow": self.user_may_allow,
            "source": self.source,
        }


@functools.lru_cache(maxsize=8192)
def _pattern_regex(pattern: str) -> re.Pattern[str]:
    return re.compile(fnmatch.translate(pattern))


def tool_pattern_matches(pattern: str, name: str) -> bool:
    """A rule's tool pattern (a name, or a glob with ``*``, ``?``, ``[...]``) against a name."""
    if _GLOB_CHARS.isdisjoint(pattern):
        return pattern == name
    return _pattern_regex(pattern).match(name) is not None


def _default(tool: AgentTool, args: dict[str, Any], policy: PolicySet) -> tuple[Verdict, str]:
    from openprogram.programs._approval import tool_requires_approval

    if policy.deny_by_default:
        return "deny", "denied by default: the organisation allows only what a rule allows"
    if tool_requires_approval(tool, args):
        return "ask", f"the tool's default: {tool.name!r} asks before it runs"
    return "allow", f"the tool's default: {tool.name!r} runs without asking"


def _scope_choice(matching: list[Rule]) -> Rule:
    """Step 3: the most restrictive; among equals, one not marked "may be relaxed"."""
    top = max(RANK[rule.verdict] for rule in matching)
    tied = [rule for rule in matching if RANK[rule.verdict] == top]
    return next((rule for rule in tied if not rule.may_be_relaxed), tied[0])


def decide(policy: PolicySet | None, tool: AgentTool, args: dict[str, Any]) -> PolicyDecision:
    """The verdict on one call of ``tool`` with ``args`` (module doc, steps 1-5)."""
    policy = policy or EMPTY_POLICY
    verdict, words = _default(tool, args, policy)
    if tool.name in _EXEMPT:
        return PolicyDecision(
            "allow", None, "tool_search serves only tools that passed", source="exempt"
        )
    deciding: Rule | None = None
    floor = 0  # no verdict below this: fixed by a broader rule not marked "may be relaxed"
    considered: list[Considered] = []
    reaching = policy.rules_for(tool.name)
    for scope in SCOPES:
        matching: list[Rule] = []
        for rule in reaching:
            if rule.scope != scope:
                continue
            holds = rule.condition is None or condition_matches(
                rule.condition, tool.name, args, allow=rule.verdict == "allow"
            )
            if holds:
                matching.append(rule)
            else:
                considered.append(Considered(rule, False, "condition does not hold"))
        if not matching:
            continue
        chosen = _scope_choice(matching)
        rank = RANK[chosen.verdict]
        outcome: str
        if rank >= RANK[verdict]:
            outcome = "decides"
        elif rank < floor:
            outcome = f"not relaxed: {words} is not marked “may be relaxed”"
        elif scope == "user" and verdict != "ask":
            outcome = f"not relaxed: a user's own rule may relax only an ask ({words})"
        elif scope == "user" and policy.always_asks(tool.name):
            outcome = "not relaxed: an admin marked this tool “always ask”"
        else:
            outcome = "decides"
        for rule in matching:
            considered.append(
                Considered(rule, True, outcome if rule is chosen else "outweighed in its scope")
            )
        if outcome != "decides":
            continue
        verdict, deciding, words = chosen.verdict, chosen, chosen.words()
        if not chosen.may_be_relaxed:
            floor = max(floor, rank)
    marked = policy.always_asks(tool.name)
    source: Literal["default", "rule", "mark"] = "default" if deciding is None else "rule"
    if marked and verdict == "allow":
        verdict, deciding, source = "ask", None, "mark"
        words = f"an admin marked {tool.name!r} “always ask”"
    user_may_allow = verdict == "ask" and not marked and floor == 0
    return PolicyDecision(verdict, deciding, words, tuple(considered), user_may_allow, source)


# --- layer 5: the tools no rule could allow ------------------------------------------

_State = tuple[str, int, str]
"""(verdict, floor, words of the deciding rule) at one point of the walk."""


def _scope_options(rules: list[Rule]) -> list[tuple[Rule, bool] | None]:
    """What one scope may decide, over every set of conditions that could hold.

    Each option is (the deciding rule, whether it may be relaxed), or None when it is
    possible that no rule of the scope matches.
    """
    fixed = [rule for rule in rules if rule.condition is None]
    options: list[tuple[Rule, bool] | None] = [] if fixed else [None]
    floor = max((RANK[rule.verdict] for rule in fixed), default=-1)
    for rank in sorted({RANK[rule.verdict] for rule in rules}):
        if rank < floor:
            continue
        tied = [rule for rule in rules if RANK[rule.verdict] == rank]
        fixed_tied = [rule for rule in tied if rule.condition is None]
        strict = next((rule for rule in fixed_tied if not rule.may_be_relaxed), None)
        if strict is not None:
            options.append((strict, False))
            continue
        for rule in tied:
            options.append((rule, rule.may_be_relaxed))
    return options


def _step(state: _State, option: tuple[Rule, bool] | None, scope: Scope, marked: bool) -> _State:
    if option is None:
        return state
    verdict, floor, _ = state
    rule, relaxable = option
    rank = RANK[rule.verdict]
    relaxing = rank < RANK[verdict]
    if relaxing and (rank < floor or (scope == "user" and (verdict != "ask" or marked))):
        return state
    return rule.verdict, floor if relaxable else max(floor, rank), rule.words()


def _denial(policy: PolicySet, tool: AgentTool, rules: list[Rule]) -> str | None:
    """Words of the rule that denies every call of ``tool``; None when some call may pass."""
    if policy.deny_by_default:
        states: set[_State] = {("deny", 0, _default(tool, {}, policy)[1])}
    elif callable(tool.requires_approval):
        states = {("ask", 0, ""), ("allow", 0, "")}
    else:
        states = {("ask" if tool.requires_approval else "allow", 0, "")}
    marked = policy.always_asks(tool.name)
    for scope in SCOPES:
        options = _scope_options([rule for rule in rules if rule.scope == scope])
        if options:
            states = {_step(state, option, scope, marked) for state in states for option in options}
    if all(verdict == "deny" for verdict, _, _ in states):
        return min(words for _, _, words in states)
    return None


class _RemovalCache:
    """Layer 5's removals per (registry version, policy): a turn repeats its user's policy."""

    def __init__(self, size: int = 64) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._removals: dict[tuple[int, tuple[Any, ...]], Mapping[str, str]] = {}
        self._matches: dict[tuple[int, str], frozenset[str]] = {}

    def removals(self, policy: PolicySet, index: Any) -> Mapping[str, str]:
        key = (index.version, policy.key)
        found = self._removals.get(key)
        if found is not None:
            return found
        built = self._build(policy, index)
        with self._lock:
            if len(self._removals) >= self._size:
                self._removals.pop(next(iter(self._removals)))
            self._removals[key] = built
        return built

    def _names(self, pattern: str, index: Any) -> frozenset[str]:
        if _GLOB_CHARS.isdisjoint(pattern):
            return frozenset({pattern}) & index.names
        key = (index.version, pattern)
        found = self._matches.get(key)
        if found is None:
            found = frozenset(filter(_pattern_regex(pattern).match, index.order))
            with self._lock:
                if len(self._matches) > 4096:
                    self._matches.clear()
                self._matches[key] = found
        return found

    def _build(self, policy: PolicySet, index: Any) -> Mapping[str, str]:
        reached: dict[str, list[Rule]] = {}
        for rule in policy.rules:
            for name in self._names(rule.tool, index):
                reached.setdefault(name, []).append(rule)
        removed: dict[str, str] = {}
        if policy.deny_by_default:
            words = "denied by default: the organisation allows only what a rule allows"
            removed = dict.fromkeys(index.names - reached.keys() - _EXEMPT, words)
        tools = dict(index.pairs)
        # Tools reached by the same rules with the same default share one answer.
        answers: dict[tuple[Any, ...], str | None] = {}
        for name, rules in reached.items():
            if name in _EXEMPT:
                continue
            tool = tools[name]
            approval = tool.requires_approval
            shape = (tuple(rules), "callable" if callable(approval) else bool(approval))
            if policy.always_ask:
                shape = (*shape, policy.always_asks(name))
            if shape not in answers:
                answers[shape] = _denial(policy, tool, rules)
            if answers[shape] is not None:
                removed[name] = answers[shape]  # type: ignore[assignment]
        return removed


_removal_cache = _RemovalCache()


def policy_removals(policy: PolicySet | None, index: Any) -> Mapping[str, str]:
    """Layer 5: tool name → the deciding rule in words, for each tool no call could pass.

    ``index`` is the resolution's ``RegistryIndex``. A tool is listed only when every
    set of arguments ends in deny; conditional rules never remove a tool here, they
    are decided per call. Cached per registry version and policy.
    """
    if policy is None or (not policy.rules and not policy.deny_by_default):
        return {}
    return _removal_cache.removals(policy, index)


# --- validation ----------------------------------------------------------------------


def rule_problems(rule: Rule) -> dict[str, str]:
    """``{field: message}`` for a rule that cannot be saved; empty when it is sound."""
    problems: dict[str, str] = {}
    if not _TOOL_PATTERN.match(rule.tool or ""):
        problems["tool"] = (
            f"tool pattern {rule.tool!r} must be a tool name or a glob of letters, digits, "
            "'_', '-', '.', '*', '?' and [...] (at most 255 characters)"
        )
    elif rule.tool.count("[") != rule.tool.count("]"):
        problems["tool"] = f"tool pattern {rule.tool!r} has an unclosed '['"
    if rule.verdict not in RANK:
        problems["verdict"] = f"verdict must be allow, ask or deny, not {rule.verdict!r}"
    if rule.scope not in SCOPES:
        problems["scope"] = f"scope must be org, group or user, not {rule.scope!r}"
    if rule.condition is not None:
        problems.update(condition_problems(rule.condition, rule.tool))
    return problems
