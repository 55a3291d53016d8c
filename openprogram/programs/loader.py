"""Managed program packages: import them, keep only their ``PROGRAM_ENTRIES``.

A program package (a plugin) is an importable module that lists its public
tools in ``PROGRAM_ENTRIES``: ``@function`` functions, bound Agent methods with
``tool=True``, or AgentTool objects. Packages come from a host setting
(``OPENPROGRAM_PACKAGES`` in the web app) and from the Python entry-point group
``openprogram.programs`` (``name = "module"`` or ``"module:ATTRIBUTE"`` naming
the entries list).

Loading one package, step by step:

1. Import the module while watching the registry.
2. Resolve every entry to its AgentTool. A callable without a tool (its
   ``available_if`` ruled it out) is skipped and reported; anything else that
   is not a tool fails the load.
3. Every tool the package registered that is not an entry is unregistered:
   nothing but the entries is exposed.
4. Entries are registered if they were not, and stamped with
   ``tool.package``; an ``@function`` entry's default source becomes "plugin".
   Nothing else changes: expose, approval, channel and availability settings
   stay as the author wrote them, so loading grants no extra authority.
5. A package that replaced a tool it does not own, or failed in any other
   way, is rolled back: the registry is restored as it was before the import.

Failures never raise out of :func:`load_program_packages`; they are logged and
kept in :func:`package_loads` for the host to show.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import sys
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from openprogram.agent.types import AgentTool
from openprogram.programs import registry

__all__ = [
    "ENTRIES_ATTRIBUTE",
    "ENTRY_POINT_GROUP",
    "PackageLoad",
    "PackageLoadError",
    "entry_point_packages",
    "load_program_package",
    "load_program_packages",
    "package_loads",
]

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "openprogram.programs"
ENTRIES_ATTRIBUTE = "PROGRAM_ENTRIES"
LoadOrigin = Literal["setting", "entry_point", "direct"]


class PackageLoadError(RuntimeError):
    """A program package could not be loaded; the registry was left as it was."""


@dataclass
class PackageLoad:
    """What loading one package did, for logs and the Programs page."""

    package: str
    origin: LoadOrigin
    tools: list[str] = field(default_factory=list)
    """Names of the registered public entries."""
    dropped: list[str] = field(default_factory=list)
    """Tools the package registered without listing them: unregistered."""
    skipped: list[str] = field(default_factory=list)
    """Entries without a tool (ruled out by available_if)."""
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


_lock = threading.RLock()
_loads: dict[str, PackageLoad] = {}


def package_loads() -> list[PackageLoad]:
    """Every package load attempted in this process, in order."""
    with _lock:
        return list(_loads.values())


def _tool_module(tool: AgentTool) -> str | None:
    fn = getattr(tool, "fn", None)
    return getattr(fn, "__module__", None) if fn is not None else None


def _in_package(module: str | None, package: str) -> bool:
    return module is not None and (module == package or module.startswith(f"{package}."))


def _entry_tool(package: str, entry: Any, skipped: list[str]) -> AgentTool | None:
    if isinstance(entry, AgentTool):
        return entry
    tool = getattr(entry, "_agent_tool", None)
    if isinstance(tool, AgentTool):
        return tool
    owner = getattr(entry, "__self__", None)
    if owner is None and getattr(entry, "_openprogram_scoped", False):
        raise PackageLoadError(
            f"package {package!r}: {ENTRIES_ATTRIBUTE} lists {entry.__qualname__!r}, an Agent "
            "method of the class; list the bound method of an instance (agent.method)"
        )
    if owner is not None:
        options = getattr(owner, "_parsed_options", {}).get(getattr(entry, "__name__", ""))
        if options is None or not options.wants_tool:
            raise PackageLoadError(
                f"package {package!r}: {ENTRIES_ATTRIBUTE} lists {entry.__qualname__!r}, which "
                "is not a tool; give it tool=True in method_options"
            )
    if callable(entry):
        # An @function or Agent method tool whose available_if ruled it out.
        name = getattr(entry, "__qualname__", repr(entry))
        logger.warning("package %r: entry %r has no tool (available_if?)", package, name)
        skipped.append(name)
        return None
    raise PackageLoadError(
        f"package {package!r}: {ENTRIES_ATTRIBUTE} item {entry!r} is not a tool; list "
        "@function functions, Agent methods with tool=True, or AgentTool objects"
    )


def _entries(package: str, module: Any, attribute: str) -> Sequence[Any]:
    entries = getattr(module, attribute, None)
    if entries is None:
        raise PackageLoadError(f"package {package!r} has no {attribute} list")
    if isinstance(entries, str | bytes) or not isinstance(entries, Sequence):
        raise PackageLoadError(
            f"package {package!r}: {attribute} must be a list, got {type(entries).__name__}"
        )
    return entries


def _import(package: str) -> Any:
    try:
        return importlib.import_module(package)
    except Exception as exc:
        raise PackageLoadError(
            f"package {package!r} failed to import: {type(exc).__name__}: {exc}"
        ) from exc


def _apply(
    load: PackageLoad, module: Any, attribute: str, before: registry.RegistrySnapshot
) -> None:
    package = load.package
    tools = [
        tool
        for entry in _entries(package, module, attribute)
        if (tool := _entry_tool(package, entry, load.skipped)) is not None
    ]
    for name, old in before.tools.items():
        current = registry.get(name)
        if current is not old and old.package != package:
            raise PackageLoadError(
                f"package {package!r} replaced the tool {name!r} it does not own "
                f"(source={old.source!r})"
            )
    listed = {id(tool) for tool in tools}
    for tool in registry.all_tools():
        module = _tool_module(tool)
        new = before.tools.get(tool.name) is not tool
        owned = _in_package(module, package) or tool.package == package or (new and module is None)
        if id(tool) not in listed and owned:
            registry.unregister(tool.name)
            load.dropped.append(tool.name)
    for tool in tools:
        if tool.source == "builtin":
            tool.source = "plugin"
        tool.package = package
        if registry.get(tool.name) is not tool:
            try:
                registry.register(tool)
            except registry.DuplicateToolError as exc:
                raise PackageLoadError(f"package {package!r}: {exc}") from exc
        load.tools.append(tool.name)


def _rollback(package: str, before: registry.RegistrySnapshot, modules_before: set[str]) -> None:
    registry.restore_registry(before)
    # Forget the half-imported modules so a fixed package can load later.
    for name in set(sys.modules) - modules_before:
        if _in_package(name, package):
            del sys.modules[name]


def load_program_package(
    package: str, *, attribute: str = ENTRIES_ATTRIBUTE, origin: LoadOrigin = "direct"
) -> PackageLoad:
    """Load one package (see the module docstring); raise PackageLoadError on failure.

    Loading a package that already loaded returns the earlier result, unless its
    tools have left the registry since (a reset): then its entries are registered again.
    """
    with _lock:
        previous = _loads.get(package)
        if previous is not None and previous.ok and all(map(registry.get, previous.tools)):
            return previous
        load = PackageLoad(package=package, origin=origin)
        _loads[package] = load
        before = registry.snapshot_registry()
        modules_before = set(sys.modules)
        try:
            _apply(load, _import(package), attribute, before)
        except Exception as exc:
            _rollback(package, before, modules_before)
            load.tools.clear()
            load.dropped.clear()
            if isinstance(exc, PackageLoadError):
                load.error = str(exc)
                raise
            load.error = f"package {package!r} failed to load: {type(exc).__name__}: {exc}"
            raise PackageLoadError(load.error) from exc
        if load.dropped:
            logger.info(
                "package %r: not in %s, so not registered: %s",
                package,
                attribute,
                ", ".join(load.dropped),
            )
        return load


def entry_point_packages() -> list[tuple[str, str]]:
    """``(module, entries attribute)`` for each ``openprogram.programs`` entry point."""
    found = []
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        found.append((entry_point.module, entry_point.attr or ENTRIES_ATTRIBUTE))
    return found


def load_program_packages(
    packages: Iterable[str] = (), *, entry_points: bool = True
) -> list[PackageLoad]:
    """Load the configured packages, then the entry-point group's; never raises.

    Each failure is logged with its reason and kept in :func:`package_loads`.
    """
    wanted: list[tuple[str, str, LoadOrigin]] = [
        (name, ENTRIES_ATTRIBUTE, "setting") for name in packages
    ]
    if entry_points:
        try:
            wanted += [(m, a, "entry_point") for m, a in entry_point_packages()]
        except Exception:
            logger.exception("could not read the %r entry points", ENTRY_POINT_GROUP)
    results: list[PackageLoad] = []
    seen: set[str] = set()
    for name, attribute, origin in wanted:
        if name in seen:
            continue
        seen.add(name)
        try:
            results.append(load_program_package(name, attribute=attribute, origin=origin))
        except PackageLoadError as exc:
            logger.error("program package not loaded: %s", exc)
            results.append(_loads[name])
    return results
