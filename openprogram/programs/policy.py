"""Tool resolution: layers 2, 2b, 3, 4 and 5 in the spec's order, with an explain trace.

One function, :func:`resolve_tools`, decides what a turn offers. The Programs
page, the API, the chat's debug view and the dispatcher all call it, so there
is no second implementation of policy anywhere. Each layer only subtracts from
what the previous one kept:

- L2  exposure: registered and ``expose`` (a bare call gets all of these);
- L2b selection: ``toolset`` (preset, user profile, list of names or ``"none"``),
  then ``profile`` (the chat-picked profile) intersected;
- L3  session: ``source`` drops tools whose ``unsafe_in`` names it, then
  ``agent_toolset`` (an agent profile's toolset) intersects;
- L4  availability, only with ``only_available=True`` (see ``_availability``);
- L5  veto: global ``disabled``, ``deny``, ``allow`` (intersection), the team
  ``policy``'s tools no rule could allow (``rules.policy_removals``) and the
  system veto of ``ask_user_question`` on unattended turns.

``tool_search`` is infrastructure, not a capability: it is offered exactly when
some offered tool is deferred, unless expose=False, ``disabled`` or ``deny``
vetoes it. Resolution cost is a handful of set operations per call; per-tool
work happens once per registry version (``RegistryIndex``) or, for the explain
trace, once per outcome when first read (``_decisions.TraceCache``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from functools import cached_property
from itertools import compress
from operator import attrgetter
from typing import Any

from openprogram.agent.types import AgentTool
from openprogram.programs import registry
from openprogram.programs._availability import unavailable_reason
from openprogram.programs._decisions import Outcome, ToolDecision, Trace
from openprogram.programs._deferred_state import loaded_deferred
from openprogram.programs._resolution_index import RegistryIndex, registry_index
from openprogram.programs._selection import (
    ToolSelection,
    as_names,
    selection_members,
    warn_unknown,
)
from openprogram.programs._tool_search import TOOL_SEARCH_NAME, tool_search
from openprogram.programs._walk import Layer, Stage, Walk
from openprogram.programs.explain_words import DISABLED_REASON, disabled_reason, policy_reason
from openprogram.programs.rules import PolicySet, policy_removals
from openprogram.programs.toolsets import DEFAULT_TOOLSET, UnknownToolsetError

__all__ = [
    "ASK_USER_TOOL",
    "Layer",
    "Resolution",
    "ToolDecision",
    "UnknownToolsetError",
    "agent_tools",
    "apply_tool_policy",
    "resolve_tools",
]

ASK_USER_TOOL = "ask_user_question"
_SELECTION_LAYERS: frozenset[Layer] = frozenset({"L2b", "L3", "L4"})
_NAME = attrgetter("name")
_NO_DEFERRED_STAGE = Stage(
    "L6", "drop", frozenset({TOOL_SEARCH_NAME}), "no deferred tools are offered"
)


@dataclass(eq=False)
class Resolution:
    """What a turn is offered, and the explain trace for every registered tool."""

    tools: list[AgentTool]
    warnings: list[str] = field(default_factory=list)
    _stages: list[Stage] = field(default_factory=list, repr=False)
    _index: RegistryIndex | None = field(default=None, repr=False)
    _extra: tuple[AgentTool, ...] = field(default=(), repr=False)
    """Tools in the trace the index lacks: the shipped tool_search after a registry reset."""
    _offered: set[str] | frozenset[str] | None = field(default=None, repr=False)
    """The walk's final names (exactly ``tools``' names), so the trace need not rebuild them."""
    _loaded: frozenset[str] = field(default=frozenset(), repr=False)
    _search_exempt: frozenset[Layer] = field(default=_SELECTION_LAYERS, repr=False)
    """Layers tool_search ignores; L2 too when the shipped instance stands in unregistered."""

    @property
    def names(self) -> list[str]:
        return [tool.name for tool in self.tools]

    @property
    def deferred_names(self) -> list[str]:
        return [tool.name for tool in self.tools if tool.defer]

    @cached_property
    def _trace(self) -> Trace:
        index = self._index or registry_index()
        extra = frozenset(tool.name for tool in self._extra)
        registered = index.names | extra if extra else index.names
        offered = (
            self._offered
            if self._offered is not None
            else registered.intersection(map(_NAME, self.tools))
        )
        rejections: list[Outcome] = [
            (stage.layer, stage.reason, frozenset(names))
            for stage, names in self._rejections(registered - offered)
        ]
        return index.traces.trace(rejections, self._loaded & index.deferred, self._extra)

    @cached_property
    def decisions(self) -> list[ToolDecision]:
        """Every registered tool (expose=False ones too) with the first layer that rejected it."""
        return list(self._trace.rows)

    def _rejections(self, rejected: set[str]) -> list[tuple[Stage, set[str]]]:
        """Each stage with the names it rejected first, found with one set operation per stage."""
        groups: list[tuple[Stage, set[str]]] = []
        pending = rejected - {TOOL_SEARCH_NAME}
        search_pending = TOOL_SEARCH_NAME in rejected
        for stage in self._stages:
            # tool_search skips the selection layers: it follows the deferred tools instead.
            if (
                search_pending
                and stage.layer not in self._search_exempt
                and stage.rejects(TOOL_SEARCH_NAME)
            ):
                groups.append((stage, {TOOL_SEARCH_NAME}))
                search_pending = False
            if not pending:
                continue
            hits = pending - stage.names if stage.kind == "keep" else pending & stage.names
            if hits:
                groups.append((stage, hits))
                pending -= hits
        if search_pending:
            groups.append((_NO_DEFERRED_STAGE, {TOOL_SEARCH_NAME}))
        return groups

    @cached_property
    def _by_name(self) -> dict[str, ToolDecision]:
        return {row.name: row for row in self.decisions}

    def decision(self, name: str) -> ToolDecision | None:
        return self._by_name.get(name)

    def explain(self) -> list[dict[str, Any]]:
        """One JSON-ready dict per registered tool; fresh copies the caller may change."""
        return list(map(dict, self._trace.dicts))


def _unavailable(
    current: AbstractSet[str], index: RegistryIndex, can_use_context: Mapping[str, Any]
) -> dict[str, str]:
    candidates = {tool.name: tool for tool in index.gated if tool.name in current}
    candidates.update((tool.name, tool) for tool in index.flagged() if tool.name in current)
    reasons: dict[str, str] = {}
    for name, tool in candidates.items():
        reason = unavailable_reason(tool, can_use_context)
        if reason is not None:
            reasons[name] = reason
    return reasons


def _disabled_reasons(disabled: Iterable[str] | Mapping[str, str]) -> str | Callable[[str], str]:
    """The layer-5 reason; a mapping carries each disable's reason (the admin's words)."""
    if not isinstance(disabled, Mapping) or not any(disabled.values()):
        return DISABLED_REASON
    return lambda name: disabled_reason(str(disabled.get(name) or ""))


def _veto(
    walk: Walk,
    known: AbstractSet[str],
    *,
    allow: Iterable[str] | None,
    deny: Iterable[str] | None,
    disabled: Iterable[str] | Mapping[str, str],
    attended: bool,
    warnings: list[str],
    removals: Mapping[str, str] | None = None,
) -> bool:
    """Layer 5, shared by resolve_tools and apply_tool_policy. True if tool_search is vetoed."""
    disabled_set = as_names(disabled, "disabled")
    walk.drop("L5", disabled_set, _disabled_reasons(disabled))
    if removals:
        # The team policy's tools no rule could allow, each named by its deciding rule.
        walk.drop("L5", removals.keys(), lambda name: policy_reason(removals[name]))
    deny_set: set[str] = set()
    if deny is not None:
        deny_set = as_names(deny, "deny")
        warn_unknown(deny_set, known, "deny", warnings)
        walk.drop("L5", deny_set, "in the deny list")
    if allow is not None:
        allow_set = as_names(allow, "allow")
        if allow_set and allow_set <= warn_unknown(allow_set, known, "allow", warnings):
            raise ValueError(
                "allow names no registered tool "
                f"({', '.join(map(repr, sorted(allow_set)))}); refusing to offer an empty set"
            )
        if not allow_set:
            warnings.append("allow is an empty list: no tools are offered")
        # tool_search follows the deferred tools it serves; allow caps capabilities only.
        walk.keep("L5", allow_set | {TOOL_SEARCH_NAME}, "not in the allow list")
    if not attended:
        walk.drop("L5", {ASK_USER_TOOL}, "withheld: the turn is unattended")
    return TOOL_SEARCH_NAME in disabled_set or TOOL_SEARCH_NAME in deny_set


def _settle_tool_search(walk: Walk, deferred: frozenset[str], allowed: bool) -> None:
    """tool_search is offered exactly when a deferred tool is, unless it was vetoed."""
    current = walk.owned()
    current.discard(TOOL_SEARCH_NAME)
    if not allowed:
        return
    if current.isdisjoint(deferred):
        walk.stages.append(_NO_DEFERRED_STAGE)
    else:
        current.add(TOOL_SEARCH_NAME)


def resolve_tools(
    *,
    toolset: ToolSelection | None = None,
    profile: ToolSelection | None = None,
    source: str | None = None,
    only_available: bool = False,
    allow: Iterable[str] | None = None,
    deny: Iterable[str] | None = None,
    disabled: Iterable[str] | Mapping[str, str] = (),
    attended: bool = True,
    can_use_context: Mapping[str, Any] | None = None,
    named_profiles: Mapping[str, Iterable[str]] | None = None,
    agent_toolset: ToolSelection | None = None,
    policy: PolicySet | None = None,
) -> Resolution:
    """Walk layers 2 → 2b → 3 → (4) → 5 and return the offered tools with the explain trace.

    ``toolset``, ``profile`` and ``agent_toolset`` each accept a preset name
    (``TOOLSETS``, ``"default"``, ``"none"``, an author toolset), a name from
    ``named_profiles`` (the user's tool profiles, which shadow presets of the
    same name) or a list of tool names. Unknown names raise
    :class:`UnknownToolsetError`; unknown tool names in lists, ``allow`` and
    ``deny`` become warnings, and an ``allow`` naming no registered tool raises
    ValueError rather than silently offering nothing. ``disabled`` may map each
    name to why it was disabled; the trace then reads ``globally disabled: <why>``.
    ``policy`` (``rules.PolicySet``) removes the tools no rule could allow for this
    user; its conditional rules are decided per call (``call_policy``).
    """
    index = registry_index()
    profiles = named_profiles or {}
    warnings: list[str] = []
    walk = Walk(index.exposed, index.names if index.exposed is index.names else None)
    walk.stages.append(Stage("L2", "keep", index.exposed, "not exposed (expose=False)"))

    def narrow(layer: Layer, selection: ToolSelection | None, what: str) -> None:
        if selection is not None and selection != DEFAULT_TOOLSET:
            members, reason = selection_members(selection, what, index, profiles, warnings)
            walk.keep(layer, members, reason, registered=True)

    narrow("L2b", toolset, "toolset")
    narrow("L2b", profile, "profile")
    if source is not None:
        walk.drop("L3", registry.unsafe_in_channel(source), f"unsafe_in {source}")
    narrow("L3", agent_toolset, "agent profile toolset")
    if only_available:
        reasons = _unavailable(walk.current, index, can_use_context or {})
        walk.drop("L4", reasons.keys(), reasons.__getitem__)
    search_vetoed = _veto(
        walk,
        index.names,
        allow=allow,
        deny=deny,
        disabled=disabled,
        attended=attended,
        warnings=warnings,
        removals=policy_removals(policy, index),
    )
    search_exposed = TOOL_SEARCH_NAME in index.exposed or TOOL_SEARCH_NAME not in index.names
    _settle_tool_search(walk, index.deferred, search_exposed and not search_vetoed)
    current = walk.current
    tools = list(compress(index.tools, map(current.__contains__, index.order)))
    extra: tuple[AgentTool, ...] = ()
    search_exempt = _SELECTION_LAYERS
    if TOOL_SEARCH_NAME not in index.names:
        # Registry was reset (tests, embedders): the shipped tool_search still serves.
        extra = (tool_search,)
        search_exempt = _SELECTION_LAYERS | {"L2"}
        if TOOL_SEARCH_NAME in current:
            tools.append(tool_search)
    return Resolution(
        tools=tools,
        warnings=warnings,
        _stages=walk.stages,
        _index=index,
        _extra=extra,
        _offered=current if isinstance(current, set | frozenset) else frozenset(current),
        _loaded=loaded_deferred(),
        _search_exempt=search_exempt,
    )


def agent_tools(
    toolset: ToolSelection | None = None,
    source: str | None = None,
    only_available: bool = False,
    allow: Iterable[str] | None = None,
    deny: Iterable[str] | None = None,
    **kwargs: Any,
) -> list[AgentTool]:
    """The spec's entry point: the offered tools of :func:`resolve_tools` (same arguments)."""
    return resolve_tools(
        toolset=toolset,
        source=source,
        only_available=only_available,
        allow=allow,
        deny=deny,
        **kwargs,
    ).tools


def apply_tool_policy(
    tools: list[AgentTool],
    *,
    allow: Iterable[str] | None = None,
    deny: Iterable[str] | None = None,
    disabled: Iterable[str] | Mapping[str, str] = (),
    attended: bool = True,
) -> list[AgentTool]:
    """Layer 5 alone, on a list someone already selected (order kept).

    Same vetoes as :func:`resolve_tools`; ``tool_search`` stays only while a
    deferred tool remains. Unknown names are tolerated here (there is no trace
    to report them in) except an ``allow`` that names nothing known: ValueError.
    """
    names = frozenset(tool.name for tool in tools)
    walk = Walk(names)
    search_vetoed = _veto(
        walk,
        registry_index().names | names,
        allow=allow,
        deny=deny,
        disabled=disabled,
        attended=attended,
        warnings=[],
    )
    deferred = frozenset(tool.name for tool in tools if tool.defer)
    _settle_tool_search(walk, deferred, TOOL_SEARCH_NAME in names and not search_vetoed)
    kept = walk.current
    return [tool for tool in tools if tool.name in kept]
