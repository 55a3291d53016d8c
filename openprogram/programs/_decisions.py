"""The explain trace's rows, cached per registry version and per outcome.

The dispatcher explains every turn, and a turn usually resolves with the same
arguments as the last one (same profile, deny list, global disables). A trace
is fully determined by the registry version, which names each stage rejected
first, and which deferred tools are loaded; :class:`TraceCache` keys traces on
exactly that. A repeated resolution then costs its set operations and one
lookup instead of a row object per registered tool, and ``explain()`` copies
dicts laid out in registry order instead of building each one. A new outcome
reuses every row whose verdict it shares with an earlier one, so only the rows
that changed are built.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from operator import itemgetter
from typing import Any, Literal, NamedTuple

from openprogram.agent.types import AgentTool

__all__ = ["Layer", "Outcome", "ToolDecision", "Trace", "TraceCache"]

Layer = Literal["L1", "L2", "L2b", "L3", "L4", "L5", "L6"]

Outcome = tuple[Layer, "str | Callable[[str], str]", frozenset[str]]
"""A stage's layer, its reason (or per-name reason function) and the names it rejected first."""

_MAX_TRACES = 4
"""Traces kept per registry version: a bound on memory (a 10,000-tool trace is a few MB)."""
_MAX_VERDICTS = 32
"""Distinct verdicts whose rows are kept per registry version (reasons name toolsets)."""


class ToolDecision(NamedTuple):
    """One row of the explain trace: whether a registered tool is offered, and if not why.

    Immutable (a named tuple): traces of one registry version share rows.
    """

    name: str
    offered: bool
    layer: Layer | None
    reason: str
    deferred: bool
    source: str
    loaded: bool = False

    @property
    def summary(self) -> str:
        if self.offered:
            return "offered (deferred)" if self.deferred else "offered"
        return f"{self.layer}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return {**self._asdict(), "summary": self.summary}


_Verdict = tuple[Layer | None, str, str]
"""(layer, reason, summary) for one tool."""
_OFFERED: _Verdict = (None, "", "offered")
_OFFERED_DEFERRED: _Verdict = (None, "", "offered (deferred)")


class Trace:
    """One explain trace: its rows in registry order, and the dicts ``explain()`` copies."""

    __slots__ = ("dicts", "rows")

    def __init__(self, rows: tuple[ToolDecision, ...], dicts: tuple[dict[str, Any], ...]) -> None:
        self.rows = rows
        self.dicts = dicts
        """Templates: callers get copies, never these."""


def _reason_key(reason: str | Callable[[str], str], names: frozenset[str]) -> Hashable:
    # Layer-4 reasons are per tool (a function of the name): the key holds what they said.
    return frozenset((name, reason(name)) for name in names) if callable(reason) else reason


_Pair = tuple[ToolDecision, dict[str, Any]]


def _pair(tool: AgentTool, verdict: _Verdict | None, loaded: bool = False) -> _Pair:
    """A row and its dict template; ``verdict=None`` means offered."""
    if verdict is None:
        verdict = _OFFERED_DEFERRED if tool.defer else _OFFERED
    layer, reason, summary = verdict
    row = ToolDecision(tool.name, layer is None, layer, reason, tool.defer, tool.source, loaded)
    return row, {**row._asdict(), "summary": summary}


class TraceCache:
    """Per registry version: the last few traces, keyed by what each stage rejected.

    Rows are shared too: a new outcome (one more denied name) reuses every row
    whose verdict did not change, so only what changed is built.
    """

    def __init__(self, tools: Sequence[AgentTool]) -> None:
        self._tools = {tool.name: tool for tool in tools}
        self._names = frozenset(self._tools)
        self._traces: OrderedDict[Hashable, Trace] = OrderedDict()
        self._pairs: dict[_Verdict | None, dict[str, _Pair]] = {}
        self._lock = threading.Lock()

    def trace(
        self,
        rejections: Sequence[Outcome],
        loaded: frozenset[str],
        extra: tuple[AgentTool, ...] = (),
    ) -> Trace:
        """The trace for these rejections; ``extra`` tools (not in the index) come last."""
        key = (
            tuple(
                (layer, _reason_key(reason, names), names) for layer, reason, names in rejections
            ),
            loaded,
            tuple(map(id, extra)),
        )
        with self._lock:
            cached = self._traces.get(key)
            if cached is not None:
                self._traces.move_to_end(key)
                return cached
            built = self._build(rejections, loaded, extra)
            self._traces[key] = built
            while len(self._traces) > _MAX_TRACES:
                self._traces.popitem(last=False)
        return built

    def _build(
        self, rejections: Sequence[Outcome], loaded: frozenset[str], extra: tuple[AgentTool, ...]
    ) -> Trace:
        tools = {**self._tools, **{tool.name: tool for tool in extra}}
        # Rows that depend on more than the verdict are built fresh: per-tool layer-4
        # reasons, tools loaded this turn, and tools the index does not hold.
        fresh: dict[str, _Verdict | None] = dict.fromkeys(loaded | tools.keys() - self._names)
        pairs: dict[str, _Pair] = {}
        offered = frozenset(tools)
        for layer, reason, names in rejections:
            offered -= names
            if callable(reason):
                fresh.update(
                    (name, (layer, text := reason(name), f"{layer}: {text}")) for name in names
                )
            else:
                self._gather(pairs, (layer, reason, f"{layer}: {reason}"), names - fresh.keys())
                fresh.update(
                    (name, (layer, reason, f"{layer}: {reason}")) for name in names & fresh.keys()
                )
        self._gather(pairs, None, offered - fresh.keys())
        for name, verdict in fresh.items():
            pairs[name] = _pair(tools[name], verdict, loaded=name in loaded)
        ordered = list(map(pairs.__getitem__, tools))
        # Copied once here, so the templates sit in memory in the order explain() reads them.
        dicts = tuple(map(dict, map(itemgetter(1), ordered)))
        return Trace(tuple(map(itemgetter(0), ordered)), dicts)

    def _gather(
        self, pairs: dict[str, _Pair], verdict: _Verdict | None, names: frozenset[str]
    ) -> None:
        shared = self._pairs.get(verdict)
        if shared is None:
            if len(self._pairs) >= _MAX_VERDICTS:
                self._pairs.clear()
            shared = self._pairs[verdict] = {}
        # set.difference(dict) probes the dict in C: rows already built cost no Python work.
        for name in names.difference(shared):
            shared[name] = _pair(self._tools[name], verdict)
        pairs.update(zip(names, map(shared.__getitem__, names), strict=True))
