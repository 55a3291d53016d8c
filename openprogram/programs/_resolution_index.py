"""What resolution needs from the registry, computed once per registry version.

Names as frozensets (all, exposed, deferred), registration order, the tools
with layer-4 gates, and the explain traces built so far. Tools whose owner set ``unavailable_reason`` are rescanned
only when some tool's reason changes (``availability_epoch``).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from itertools import compress
from operator import attrgetter

from openprogram.agent.types import AgentTool, availability_epoch
from openprogram.programs import registry
from openprogram.programs._decisions import TraceCache

__all__ = ["RegistryIndex", "registry_index"]

_UNAVAILABLE_REASON = attrgetter("unavailable_reason")


@dataclass(frozen=True)
class RegistryIndex:
    version: int
    pairs: tuple[tuple[str, AgentTool], ...]
    order: tuple[str, ...]
    tools: tuple[AgentTool, ...]
    names: frozenset[str]
    exposed: frozenset[str]
    deferred: frozenset[str]
    gated: tuple[AgentTool, ...]
    traces: TraceCache
    """Explain traces of this version, shared by resolutions with the same outcome."""
    _flagged: list[tuple[int, tuple[AgentTool, ...]]] = field(default_factory=list)

    def flagged(self) -> tuple[AgentTool, ...]:
        """Tools whose owner set ``unavailable_reason``, rescanned only when one changes."""
        epoch = availability_epoch()
        cached = self._flagged[-1] if self._flagged else None
        if cached is not None and cached[0] == epoch:
            return cached[1]
        tools = tuple(compress(self.tools, map(_UNAVAILABLE_REASON, self.tools)))
        self._flagged.append((epoch, tools))
        del self._flagged[:-1]
        return tools

    @classmethod
    def build(cls, version: int, tools: list[AgentTool]) -> RegistryIndex:
        pairs = tuple((tool.name, tool) for tool in tools)
        names = frozenset(name for name, _ in pairs)
        exposed = frozenset(name for name, tool in pairs if tool.expose)
        return cls(
            version=version,
            pairs=pairs,
            order=tuple(name for name, _ in pairs),
            tools=tuple(tools),
            names=names,
            # The same object when nothing is hidden lets Walk.keep skip a whole pass.
            exposed=names if exposed == names else exposed,
            deferred=frozenset(name for name, tool in pairs if tool.defer),
            gated=tuple(
                tool for tool in tools if tool.requires_env or tool.check_fn or tool.can_use
            ),
            traces=TraceCache(tools),
        )


_index_lock = threading.Lock()
_index: RegistryIndex | None = None


def registry_index() -> RegistryIndex:
    global _index
    version = registry.registry_version()
    current = _index
    if current is not None and current.version == version:
        return current
    with _index_lock:
        # all_tools() copies under the registry lock; its version is read first so a
        # concurrent change can only make the index rebuild again, never go stale.
        built = RegistryIndex.build(version, registry.all_tools())
        _index = built
    return built
