"""The narrowing walk behind resolve_tools: surviving names plus the stages that cut them.

Each stage records the set it applied, not the names it removed, so resolving
costs set operations only; the explain trace asks the stages, in order, which
one first rejected a tool, and only when someone reads it.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Literal

from openprogram.programs._decisions import Layer

__all__ = ["Layer", "Stage", "Walk"]


@dataclass(frozen=True)
class Stage:
    """One filter step: ``keep`` rejects names outside ``names``, ``drop`` names inside.

    Stages hold the caller's sets as given, so resolution never pays for the
    explain trace; a tool's rejection is found only when the trace is read.
    """

    layer: Layer
    kind: Literal["keep", "drop"]
    names: AbstractSet[str]
    reason: str | Callable[[str], str]

    def rejects(self, name: str) -> bool:
        return (name not in self.names) if self.kind == "keep" else (name in self.names)


class Walk:
    """The surviving names, narrowed stage by stage, and the stages for the explain trace."""

    def __init__(self, start: frozenset[str], universe: frozenset[str] | None = None) -> None:
        self.current: AbstractSet[str] = start
        self._owned = False
        self._universe = universe
        """Set when ``start`` holds every name a selection can contain (nothing hidden)."""
        self.stages: list[Stage] = []

    def owned(self) -> set[str]:
        if not self._owned:
            self.current = set(self.current)
            self._owned = True
        return self.current  # type: ignore[return-value]

    def keep(
        self, layer: Layer, names: AbstractSet[str], reason: str, *, registered: bool = False
    ) -> None:
        """Keep only ``names``; ``registered`` promises they are all registered names."""
        if registered and self.current is self._universe:
            # Nothing hidden and nothing narrowed yet: intersecting is a plain copy.
            self.current = set(names)
        else:
            # set & set iterates the smaller side: cost follows the selection, not the registry.
            self.current = self.current & names
        self._owned = type(self.current) is set
        self.stages.append(Stage(layer, "keep", names, reason))

    def drop(
        self, layer: Layer, names: AbstractSet[str], reason: str | Callable[[str], str]
    ) -> None:
        if names:
            self.owned().difference_update(names)
            self.stages.append(Stage(layer, "drop", names, reason))
