"""Turning toolset/profile/allow/deny arguments into sets of registered tool names.

A string is a preset or profile name; a list holds tool names, and an entry
that is no tool's name may name a preset or profile whose members are added.
Unknown names become warnings; an unknown toolset name raises.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from collections.abc import Set as AbstractSet

from openprogram.programs._resolution_index import RegistryIndex
from openprogram.programs.toolsets import (
    NO_TOOLSET,
    UnknownToolsetError,
    expand_toolset,
    known_toolset_names,
)

__all__ = [
    "ToolSelection",
    "as_names",
    "list_members",
    "named_members",
    "selection_members",
    "warn_unknown",
]

ToolSelection = str | Iterable[str]


def as_names(selection: Iterable[str], what: str) -> set[str]:
    if isinstance(selection, str | bytes):
        raise TypeError(f"{what} must be a list of tool names, got the string {selection!r}")
    return set(selection)


def named_members(name: str, named_profiles: Mapping[str, Iterable[str]]) -> frozenset[str]:
    if name == NO_TOOLSET:
        return frozenset()
    if name in named_profiles:
        return frozenset(as_names(named_profiles[name], f"profile {name!r}"))
    try:
        return expand_toolset(name)
    except UnknownToolsetError:
        raise UnknownToolsetError(name, known_toolset_names(named_profiles)) from None


def warn_unknown(
    names: AbstractSet[str], known: AbstractSet[str], what: str, warnings: list[str]
) -> set[str]:
    unknown = names - known
    if unknown:
        listed = ", ".join(sorted(map(repr, unknown)))
        warnings.append(f"{what} names unknown tool(s): {listed}")
    return set(unknown)


def list_members(
    entries: Iterable[str],
    what: str,
    index: RegistryIndex,
    named_profiles: Mapping[str, Iterable[str]],
    warnings: list[str],
) -> set[str]:
    """Registered names in a list; an entry that is no tool name may name a preset/profile."""
    if isinstance(entries, str | bytes):
        raise TypeError(f"{what} must be a list of tool names, got {entries!r}")
    entries = entries if isinstance(entries, Collection) else list(entries)
    # One pass in C; only when some entry is not a tool name do we look closer.
    names = index.names.intersection(entries)
    if len(names) != len(entries):
        unknown: list[str] = []
        for entry in sorted(set(entries) - names, key=repr):
            try:
                names |= named_members(entry, named_profiles) & index.names
            except (UnknownToolsetError, TypeError):
                unknown.append(repr(entry))
        if unknown:
            warnings.append(f"{what} names unknown tool(s): {', '.join(unknown)}")
    return names


def selection_members(
    selection: ToolSelection,
    what: str,
    index: RegistryIndex,
    named_profiles: Mapping[str, Iterable[str]],
    warnings: list[str],
) -> tuple[AbstractSet[str], str]:
    """The registered names a toolset/profile argument selects, and the reason for the rest.

    A string is a preset or profile name. In a list, each entry is a tool name
    or, if no tool has that name, a preset/profile name whose members are added.
    """
    if not isinstance(selection, str):
        return list_members(selection, what, index, named_profiles, warnings), (
            f"not in the {what} list"
        )
    if selection == NO_TOOLSET:
        return frozenset(), f"{what} {NO_TOOLSET!r} offers no tools"
    if selection in named_profiles:
        label = f"profile {selection!r}"
        members = list_members(named_profiles[selection], label, index, {}, warnings)
    else:
        members = named_members(selection, named_profiles) & index.names
    return members, f"not in {what} {selection!r}"
