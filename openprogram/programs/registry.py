"""The one registry shared by @function tools, Agent methods, plugins and MCP servers.

Layer 2 (exposure) reads from here: a tool is exposed when it is registered and
its ``expose`` is true. Toolset membership (layer 2b) and the ``unsafe_in``
channel blacklist (layer 3) are kept beside the tools so resolution never walks
decorator internals. All mutation happens under one lock; readers get snapshots.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass

from openprogram.agent.types import AgentTool

__all__ = [
    "DuplicateToolError",
    "InvalidToolOption",
    "RegistrySnapshot",
    "all_tools",
    "check_tool_options",
    "filter_for",
    "get",
    "register",
    "registry_version",
    "reset_registry",
    "restore_registry",
    "snapshot_registry",
    "toolset_members",
    "unregister",
    "unsafe_in_channel",
]


class InvalidToolOption(ValueError):
    """A tool instance carries a setting that cannot work."""


def check_tool_options(tool: AgentTool) -> None:
    """Refuse settings of the wrong type or range on any AgentTool (the @function rules)."""

    def fail(option: str, problem: str) -> None:
        raise InvalidToolOption(
            f"tool {getattr(tool, 'name', tool)!r}: {option}={getattr(tool, option)!r} {problem}"
        )

    if not isinstance(tool, AgentTool):
        raise InvalidToolOption(f"{tool!r} is not an AgentTool")
    if not isinstance(tool.name, str) or not _TOOL_NAME.match(tool.name):
        fail("name", "must be a non-empty name without spaces, at most 128 characters")
    for option in ("max_result_chars", "stream_capacity_chars"):
        value = getattr(tool, option)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value <= 0
        ):
            fail(option, "must be a positive integer")
    for option in ("timeout", "timeout_min", "timeout_max", "cache_ttl"):
        value = getattr(tool, option)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int | float) or not value > 0
        ):
            fail(option, "must be a positive number of seconds")
    if not (isinstance(tool.head_ratio, int | float) and 0 < tool.head_ratio < 1):
        fail("head_ratio", "must be strictly between 0 and 1")
    for option in ("persist_full", "cache", "defer"):
        if not isinstance(getattr(tool, option), bool):
            fail(option, "must be True or False")
    if not (isinstance(tool.requires_approval, bool) or callable(tool.requires_approval)):
        fail("requires_approval", "must be a bool or a callable on the arguments")
    for option in ("check_fn", "can_use"):
        if getattr(tool, option) is not None and not callable(getattr(tool, option)):
            fail(option, "must be callable")
    if not (
        isinstance(tool.parameters, dict) and tool.parameters.get("type", "object") == "object"
    ):
        fail("parameters", "must be a JSON Schema object ({'type': 'object', ...})")
    if not isinstance(tool.description, str):
        fail("description", "must be a string")


class DuplicateToolError(ValueError):
    """A second tool tried to take a name that is already registered."""


_lock = threading.RLock()
_registry: dict[str, AgentTool] = {}
_toolset_membership: dict[str, set[str]] = {}
_unsafe_in_channel: dict[str, set[str]] = {}
_version = 0
"""Bumped on every change so caches built from the registry know when to rebuild."""


_TOOL_NAME = re.compile(r"^\S{1,128}$")


@dataclass(frozen=True)
class RegistrySnapshot:
    tools: dict[str, AgentTool]
    toolsets: dict[str, frozenset[str]]
    unsafe_in: dict[str, frozenset[str]]


def _index(tool: AgentTool) -> None:
    for toolset in tool.toolsets:
        _toolset_membership.setdefault(toolset, set()).add(tool.name)
    for channel in tool.unsafe_in:
        _unsafe_in_channel.setdefault(channel, set()).add(tool.name)


def _unindex(name: str) -> None:
    for members in (*_toolset_membership.values(), *_unsafe_in_channel.values()):
        members.discard(name)


def register(tool: AgentTool, *, override: bool = False) -> AgentTool:
    """Add ``tool``; a second tool with the same name is refused unless ``override``.

    Whatever its class, its settings are checked first: an option of the wrong type
    (a plugin's ``max_result_chars="big"``) is refused here, naming the tool and the
    option, instead of failing mid-conversation or being silently ignored.
    """
    global _version
    check_tool_options(tool)
    with _lock:
        existing = _registry.get(tool.name)
        if existing is not None and existing is not tool and not override:
            raise DuplicateToolError(
                f"a tool named {tool.name!r} is already registered "
                f"(source={existing.source!r}); pass override=True to replace it"
            )
        if existing is not None:
            _unindex(tool.name)
        _registry[tool.name] = tool
        _index(tool)
        _version += 1
    return tool


def unregister(name: str) -> AgentTool | None:
    global _version
    with _lock:
        tool = _registry.pop(name, None)
        if tool is not None:
            _unindex(name)
            _version += 1
        return tool


def get(name: str) -> AgentTool | None:
    return _registry.get(name)


def all_tools() -> list[AgentTool]:
    """Every registered tool, exposed or not, in registration order."""
    with _lock:
        return list(_registry.values())


def registry_version() -> int:
    return _version


def toolset_members(toolset: str) -> frozenset[str]:
    with _lock:
        return frozenset(_toolset_membership.get(toolset, ()))


def unsafe_in_channel(channel: str) -> frozenset[str]:
    with _lock:
        return frozenset(_unsafe_in_channel.get(channel, ()))


def filter_for(
    *,
    toolset: str | None = None,
    source: str | None = None,
    names: Iterable[str] | None = None,
    exposed_only: bool = True,
) -> list[AgentTool]:
    """Registered tools matching every given criterion.

    ``toolset`` keeps members of that author-declared toolset, ``source`` keeps
    tools whose channel blacklist does NOT contain it (layer 3), ``names`` keeps
    only those names. ``exposed_only`` applies layer 2.
    """
    wanted = set(names) if names is not None else None
    with _lock:
        members = _toolset_membership.get(toolset, set()) if toolset is not None else None
        hidden = _unsafe_in_channel.get(source, set()) if source is not None else set()
        return [
            tool
            for name, tool in _registry.items()
            if (not exposed_only or tool.expose)
            and (members is None or name in members)
            and name not in hidden
            and (wanted is None or name in wanted)
        ]


def reset_registry() -> None:
    """Empty the registry (tests). Prefer snapshot_registry/restore_registry."""
    global _version
    with _lock:
        _registry.clear()
        _toolset_membership.clear()
        _unsafe_in_channel.clear()
        _version += 1


def snapshot_registry() -> RegistrySnapshot:
    with _lock:
        return RegistrySnapshot(
            tools=dict(_registry),
            toolsets={k: frozenset(v) for k, v in _toolset_membership.items()},
            unsafe_in={k: frozenset(v) for k, v in _unsafe_in_channel.items()},
        )


def restore_registry(snapshot: RegistrySnapshot) -> None:
    global _version
    with _lock:
        _registry.clear()
        _registry.update(snapshot.tools)
        _toolset_membership.clear()
        _toolset_membership.update({k: set(v) for k, v in snapshot.toolsets.items()})
        _unsafe_in_channel.clear()
        _unsafe_in_channel.update({k: set(v) for k, v in snapshot.unsafe_in.items()})
        _version += 1
