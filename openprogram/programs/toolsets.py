"""Layer 2b presets: named subsets of the exposed tools.

A preset is a dict with optional ``tools`` (names) and ``includes`` (other
presets). Its members are its own ``tools``, every included preset's members
(nested, cycle-checked) and every tool whose author declared
``@function(toolset=[name])``. A preset may name tools that are not registered
on this machine; those are simply absent, never an error.

Two names are reserved: ``"default"`` (every exposed tool, the spec's
"all tools on" profile) and ``"none"`` (no tools at all). ``tool_search`` is
in no preset: resolution offers it exactly when a deferred tool is offered.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Set
from typing import TypedDict

from openprogram.programs import registry
from openprogram.programs._tool_search import TOOL_SEARCH_NAME

__all__ = [
    "DEFAULT_TOOLS",
    "DEFAULT_TOOLSET",
    "NO_TOOLSET",
    "TOOLSETS",
    "ToolsetCycleError",
    "ToolsetSpec",
    "UnknownToolsetError",
    "expand_toolset",
    "known_toolset_names",
]

DEFAULT_TOOLSET = "default"
NO_TOOLSET = "none"


class ToolsetSpec(TypedDict, total=False):
    tools: list[str]
    includes: list[str]
    description: str


TOOLSETS: dict[str, ToolsetSpec] = {
    "fs_read": {
        "description": "Read-only file access inside the workspace.",
        "tools": ["read", "glob", "grep", "list_dir"],
    },
    "fs": {
        "description": "Read and change files inside the workspace.",
        "includes": ["fs_read"],
        "tools": ["write", "edit"],
    },
    "web": {
        "description": "Search the web and fetch pages.",
        "tools": ["web_search", "web_fetch"],
    },
    "runtime": {"description": "Run shell commands.", "tools": ["bash"]},
    "interaction": {
        "description": "Ask the user and keep a todo list.",
        "tools": ["ask_user_question", "todo_write", "todo_read"],
    },
    "research": {
        "description": "Read the web and the workspace, keep notes.",
        "includes": ["web", "fs_read"],
        "tools": ["todo_write", "todo_read"],
    },
    "safe": {
        "description": "Nothing that changes files or runs commands.",
        "includes": ["fs_read"],
        "tools": ["web_search"],
    },
    "coding": {
        "description": "Files, shell and a todo list.",
        "includes": ["fs", "runtime"],
        "tools": ["todo_write", "todo_read"],
    },
    NO_TOOLSET: {"description": "No tools at all.", "tools": []},
}
"""Shipped presets. Hosts may add entries at start-up; user profiles are passed
to resolution separately (``named_profiles``) and are not stored here."""


class UnknownToolsetError(LookupError):
    """A toolset or profile name that is neither a preset nor a user profile."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.known = known
        super().__init__(f"unknown toolset or profile {name!r}; known: {', '.join(known)}")


class ToolsetCycleError(ValueError):
    """Presets include each other in a loop."""

    def __init__(self, path: list[str]) -> None:
        self.path = path
        super().__init__(f"toolset includes form a cycle: {' -> '.join(map(repr, path))}")


def known_toolset_names(named_profiles: Mapping[str, object] | None = None) -> list[str]:
    """Every name ``toolset=`` accepts: reserved names, presets, author toolsets, profiles."""
    names = {DEFAULT_TOOLSET, NO_TOOLSET, *TOOLSETS, *registry.snapshot_registry().toolsets}
    names.update(named_profiles or ())
    return sorted(names)


_cache_lock = threading.Lock()
_cache: dict[str, frozenset[str]] = {}
_cache_key: tuple[int, int] = (-1, -1)


def _presets_fingerprint() -> int:
    # Hosts may edit TOOLSETS at start-up; a cheap hash of its shape keeps the cache honest.
    return hash(
        tuple(
            (name, tuple(spec.get("tools", ())), tuple(spec.get("includes", ())))
            for name, spec in TOOLSETS.items()
        )
    )


def _expand(name: str, path: list[str]) -> frozenset[str]:
    if name in path:
        raise ToolsetCycleError([*path[path.index(name) :], name])
    spec = TOOLSETS.get(name)
    authored = registry.toolset_members(name)
    if spec is None:
        if not authored:
            raise UnknownToolsetError(name, known_toolset_names())
        return authored
    members = set(spec.get("tools", ())) | authored
    for included in spec.get("includes", ()):
        members |= _expand(included, [*path, name])
    return frozenset(members)


def expand_toolset(name: str) -> frozenset[str]:
    """The tool names in preset ``name`` (registered or not), includes resolved.

    ``"default"`` is every exposed registered tool (bar ``tool_search``, which
    resolution adds when deferred tools need it) and ``"none"`` is empty. A
    name known only from ``@function(toolset=[...])`` is a valid preset of its
    authored members. Raises :class:`UnknownToolsetError` for anything else and
    :class:`ToolsetCycleError` when includes loop.
    """
    global _cache_key
    if name == DEFAULT_TOOLSET:
        return frozenset(
            tool.name for tool in registry.filter_for() if tool.name != TOOL_SEARCH_NAME
        )
    key = (registry.registry_version(), _presets_fingerprint())
    with _cache_lock:
        if key != _cache_key:
            _cache.clear()
            _cache_key = key
        cached = _cache.get(name)
    if cached is not None:
        return cached
    members = _expand(name, [])
    with _cache_lock:
        if _cache_key == key:
            _cache[name] = members
    return members


class _DefaultTools(Set[str]):
    """A live, read-only view of every exposed tool name (the "all tools on" profile)."""

    def _names(self) -> frozenset[str]:
        return expand_toolset(DEFAULT_TOOLSET)

    def __contains__(self, name: object) -> bool:
        tool = registry.get(name) if isinstance(name, str) else None
        return tool is not None and tool.expose and name != TOOL_SEARCH_NAME

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._names()))

    def __len__(self) -> int:
        return len(self._names())

    def __repr__(self) -> str:
        return f"DEFAULT_TOOLS({sorted(self._names())!r})"


DEFAULT_TOOLS: Set[str] = _DefaultTools()
"""Every exposed registered tool (tool_search aside), read live from the registry."""
