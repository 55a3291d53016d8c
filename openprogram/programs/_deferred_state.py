"""Per-turn layer-6 state: which deferred tools the model has loaded, and which it may load.

The state lives in one ContextVar holding a mutable set. It is mutated in place,
never replaced, because ``tool_search`` may run in a child task (timeouts wrap
calls in tasks, and tasks copy the context): an in-place add is seen by the
agent loop that spawned it, a ``ContextVar.set`` would not be.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextvars import ContextVar, Token

from openprogram.agent.types import AgentTool

__all__ = [
    "current_state",
    "install_loaded_deferred",
    "loaded_deferred",
    "mark_deferred_loaded",
    "reset_loaded_deferred",
    "searchable_pool",
]


class _LoadedDeferred(set[str]):
    """The loaded names, plus the turn's pool of tools ``tool_search`` may reveal.

    ``pool`` is None outside a turn (then every exposed deferred tool is
    searchable). Inside a turn it is exactly the resolved tool list, so a tool
    vetoed by layers 2-5 can never be found or loaded.
    """

    def __init__(self, names: Iterable[str] = (), pool: dict[str, AgentTool] | None = None):
        super().__init__(names)
        self.pool = pool
        self.search_index: object | None = None
        """Built lazily by tool_search on first use; the pool never changes within a turn."""


_loaded_deferred: ContextVar[set[str] | None] = ContextVar(
    "openprogram_loaded_deferred", default=None
)


def install_loaded_deferred(
    tools: Sequence[AgentTool] | None = None, loaded: Iterable[str] = ()
) -> Token[set[str] | None]:
    """Start a turn's layer-6 state: ``loaded`` names, and ``tools`` as the searchable pool.

    Pass the turn's resolved tools. ``tools=None`` leaves the pool open (every
    exposed deferred tool), which is what a script outside the dispatcher wants.
    Returns the token for :func:`reset_loaded_deferred`.
    """
    pool = None if tools is None else {tool.name: tool for tool in tools}
    return _loaded_deferred.set(_LoadedDeferred(loaded, pool))


def reset_loaded_deferred(token: Token[set[str] | None]) -> None:
    _loaded_deferred.reset(token)


def mark_deferred_loaded(names: Iterable[str]) -> None:
    """Record that these deferred tools' schemas go into the next provider request."""
    state = _loaded_deferred.get()
    if state is None:
        _loaded_deferred.set(_LoadedDeferred(names))
    else:
        state.update(names)


def loaded_deferred() -> frozenset[str]:
    state = _loaded_deferred.get()
    return frozenset(state) if state else frozenset()


def searchable_pool() -> dict[str, AgentTool] | None:
    """The turn's resolved tools by name, or None when no turn installed a pool."""
    state = _loaded_deferred.get()
    return getattr(state, "pool", None)


def current_state() -> _LoadedDeferred | None:
    state = _loaded_deferred.get()
    return state if isinstance(state, _LoadedDeferred) else None
