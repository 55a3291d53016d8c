"""Rows of the explain trace, shared across resolutions of one registry version.

Most of a row never changes between resolutions: a tool's name, whether it is
deferred, its source, and, for a given outcome ("offered", or rejected at
``L5: in the deny list``), the layer and reason. The dispatcher explains every
turn, so :class:`DecisionRows` builds each (outcome, tool) row once per registry
version and hands the same immutable object to every later resolution; a trace
then costs a few dict operations per tool, not an object and a dict per tool.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from openprogram.agent.types import AgentTool

__all__ = ["DecisionRows", "Layer", "ToolDecision"]

Layer = Literal["L1", "L2", "L2b", "L3", "L4", "L5", "L6"]

_MAX_OUTCOMES = 32
"""Distinct (layer, reason) outcomes kept per registry version; a bound on memory, since
reasons name toolsets and channels callers choose."""


@dataclass(frozen=True, slots=True)
class ToolDecision:
    """One row of the explain trace: whether a registered tool is offered, and if not why.

    Immutable: resolutions of the same registry version share rows.
    """

    name: str
    offered: bool
    layer: Layer | None
    reason: str
    deferred: bool
    source: str
    loaded: bool = False
    _as_dict: dict[str, Any] = field(init=False, repr=False, compare=False)
    """Built once with the row; ``to_dict`` hands out copies, so callers may mutate theirs."""

    def __post_init__(self) -> None:
        row = {
            "name": self.name,
            "offered": self.offered,
            "layer": self.layer,
            "reason": self.reason,
            "deferred": self.deferred,
            "source": self.source,
            "loaded": self.loaded,
            "summary": self.summary,
        }
        object.__setattr__(self, "_as_dict", row)

    @property
    def summary(self) -> str:
        if self.offered:
            return "offered (deferred)" if self.deferred else "offered"
        return f"{self.layer}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return dict(self._as_dict)


def _row(tool: AgentTool, layer: Layer | None, reason: str, loaded: bool = False) -> ToolDecision:
    return ToolDecision(
        name=tool.name,
        offered=layer is None,
        layer=layer,
        reason=reason,
        deferred=tool.defer,
        source=tool.source,
        loaded=loaded,
    )


class DecisionRows:
    """Per registry version: one shared row per (outcome, tool), built on first use."""

    def __init__(self, tools: Mapping[str, AgentTool]) -> None:
        self._tools = tools
        self._by_outcome: dict[tuple[Layer | None, str], dict[str, ToolDecision]] = {}
        self._lock = threading.Lock()

    def rows(
        self, layer: Layer | None, reason: str, names: set[str] | frozenset[str]
    ) -> Mapping[str, ToolDecision]:
        """Rows for registered ``names`` with this outcome (``layer=None``: offered)."""
        key = (layer, reason)
        with self._lock:
            cached = self._by_outcome.get(key)
            if cached is None:
                if len(self._by_outcome) >= _MAX_OUTCOMES:
                    self._by_outcome.clear()
                cached = self._by_outcome[key] = {}
        # set.difference(dict) probes the dict in C: no Python work for rows already built.
        for name in names.difference(cached):
            # Two threads may build the same row; both are equal, either may stay.
            cached[name] = _row(self._tools[name], layer, reason)
        return cached

    def fresh(
        self, tool: AgentTool, layer: Layer | None, reason: str, *, loaded: bool = False
    ) -> ToolDecision:
        """An unshared row: per-tool reasons (layer 4) and tools loaded this turn."""
        return _row(tool, layer, reason, loaded)
