"""``@function``: turn a plain def into a registered :class:`FunctionTool`.

Bare ``@function`` and ``@function(...)`` both work and return the original
function (Python callers keep calling it directly) with the tool attached as
``fn._agent_tool``. Every setting is checked at decoration time; a bad one
raises :class:`ToolDefinitionError` naming the tool and the option, so mistakes
surface at import rather than in the middle of a conversation.
"""

from __future__ import annotations

import inspect
import logging
import math
import re
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, overload

from openprogram.programs import registry
from openprogram.programs.execution import FunctionTool
from openprogram.programs.schema import SchemaError, analyse_signature, describe_function

__all__ = ["TOOL_SETTINGS", "ToolDefinitionError", "build_function_tool", "function"]

_log = logging.getLogger(__name__)
F = TypeVar("F", bound=Callable[..., Any])

TOOL_SETTINGS: frozenset[str] = frozenset(
    {
        "name",
        "description",
        "parameters",
        "label",
        "max_result_chars",
        "persist_full",
        "head_ratio",
        "stream_capacity_chars",
        "timeout",
        "timeout_min",
        "timeout_max",
        "cache",
        "cache_ttl",
        "check_fn",
        "requires_env",
        "can_use",
        "requires_approval",
        "expose",
        "toolset",
        "unsafe_in",
        "available_if",
        "defer",
        "register_globally",
        "source",
        "package",
        "override",
    }
)
"""Every keyword ``@function`` accepts: the spec's settings table plus source/package/override."""

_REGISTRATION_ONLY = frozenset({"available_if", "register_globally", "override"})
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_SOURCES: frozenset[str] = frozenset({"builtin", "plugin", "agent", "mcp"})


class ToolDefinitionError(ValueError):
    """A tool was declared with a setting that cannot work."""


def _as_tuple(value: str | Iterable[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(value)


def _check_settings(tool: str, settings: dict[str, Any]) -> None:
    def fail(option: str, problem: str) -> None:
        raise ToolDefinitionError(f"tool {tool!r}: {option}={settings[option]!r} {problem}")

    unknown = sorted(set(settings) - TOOL_SETTINGS)
    if unknown:
        raise ToolDefinitionError(
            f"tool {tool!r}: unknown setting(s) {', '.join(map(repr, unknown))}; "
            f"expected one of {', '.join(sorted(TOOL_SETTINGS))}"
        )
    for option in ("max_result_chars", "stream_capacity_chars"):
        value = settings.get(option)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value <= 0
        ):
            fail(option, "must be a positive integer")
    for option in ("timeout", "timeout_min", "timeout_max", "cache_ttl"):
        value = settings.get(option)
        if value is not None and (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or value <= 0
        ):
            fail(option, "must be a positive number of seconds")
    ratio = settings.get("head_ratio")
    if ratio is not None and not (isinstance(ratio, int | float) and 0 < ratio < 1):
        fail("head_ratio", "must be strictly between 0 and 1")
    low, high = settings.get("timeout_min"), settings.get("timeout_max")
    if low is not None and high is not None and low > high:
        fail("timeout_min", f"is greater than timeout_max={high!r}")
    if settings.get("source", "builtin") not in _SOURCES:
        fail("source", f"must be one of {sorted(_SOURCES)}")
    if "name" in settings and not (
        isinstance(settings["name"], str) and _TOOL_NAME.match(settings["name"])
    ):
        fail("name", "must be 1-64 letters, digits, '_' or '-'")
    for option in ("check_fn", "can_use"):
        if settings.get(option) is not None and not callable(settings[option]):
            fail(option, "must be callable")
    approval = settings.get("requires_approval", False)
    if not (isinstance(approval, bool) or callable(approval)):
        fail("requires_approval", "must be a bool or a callable on the arguments")
    if "parameters" in settings and not (
        isinstance(settings["parameters"], dict)
        and settings["parameters"].get("type", "object") == "object"
    ):
        fail("parameters", "must be a JSON Schema object ({'type': 'object', ...})")


def build_function_tool(fn: Callable[..., Any], **settings: Any) -> FunctionTool:
    """Build (never register) the :class:`FunctionTool` for ``fn``.

    Works on plain functions and bound methods (``self`` is not in the schema).
    Registration-only settings (available_if, register_globally, override) are
    accepted and ignored here.
    """
    name = settings.get("name") or getattr(fn, "__name__", None) or type(fn).__name__
    _check_settings(name, settings)
    if "name" not in settings and not _TOOL_NAME.match(name):
        raise ToolDefinitionError(f"tool {name!r}: the function name is not a valid tool name")
    if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
        raise ToolDefinitionError(
            f"tool {name!r}: a generator cannot be a tool; stream through on_update and return"
        )
    derived_description, param_docs = describe_function(fn)
    timeout_min, timeout_max = settings.get("timeout_min"), settings.get("timeout_max")
    try:
        signature = analyse_signature(
            fn,
            model_name=f"{name}_arguments",
            param_descriptions=param_docs,
            llm_timeout=_declares_timeout(fn) and (timeout_min, timeout_max) != (None, None),
            timeout_min=timeout_min,
            timeout_max=timeout_max,
            timeout_default=settings.get("timeout"),
        )
    except SchemaError as exc:
        raise ToolDefinitionError(f"tool {name!r}: {exc}") from exc
    if signature.accepts_var_keyword and "parameters" not in settings:
        raise ToolDefinitionError(
            f"tool {name!r}: a **kwargs function needs an explicit parameters= schema"
        )
    description = settings.get("description") or derived_description
    if not description:
        raise ToolDefinitionError(
            f"tool {name!r}: no description; write a docstring or pass description="
        )
    tool_settings = {k: v for k, v in settings.items() if k not in _REGISTRATION_ONLY}
    # As in method_options: a non-bool ``expose`` (the spec's "io") means exposed, and the
    # value is kept as metadata on ``tool.expose_hint``.
    expose_hint = None
    if "expose" in tool_settings and not isinstance(tool_settings["expose"], bool):
        expose_hint = tool_settings["expose"]
        tool_settings["expose"] = bool(expose_hint)
    tool_settings.update(
        name=name,
        description=description,
        parameters=settings.get("parameters", signature.parameters),
        toolsets=_as_tuple(tool_settings.pop("toolset", None)),
        unsafe_in=frozenset(_as_tuple(tool_settings.get("unsafe_in"))),
        requires_env=_as_tuple(tool_settings.get("requires_env")),
    )
    tool = FunctionTool(fn, signature=signature, **tool_settings)
    tool.expose_hint = expose_hint  # type: ignore[attr-defined]
    return tool


def _declares_timeout(fn: Callable[..., Any]) -> bool:
    try:
        return "timeout" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _is_available(name: str, available_if: Any) -> bool:
    """Layer 1: decided once, at decoration. A raising gate counts as unavailable."""
    if available_if is None:
        return True
    try:
        available = bool(available_if() if callable(available_if) else available_if)
    except Exception:
        _log.warning("tool %r not registered: available_if raised", name, exc_info=True)
        return False
    if not available:
        _log.info("tool %r not registered: available_if is false", name)
    return available


def _build_and_register_tool(fn: Callable[..., Any], **settings: Any) -> FunctionTool | None:
    """The one path every @function and Agent method takes into the registry.

    Returns None when ``available_if`` rules the tool out (it is then not even
    built); with ``register_globally=False`` the tool is built but not
    registered. A duplicate name is refused unless ``override=True``.
    """
    name = settings.get("name") or getattr(fn, "__name__", "")
    _check_settings(name, settings)
    if not _is_available(name, settings.get("available_if")):
        return None
    tool = build_function_tool(fn, **settings)
    if settings.get("register_globally", True):
        try:
            registry.register(tool, override=bool(settings.get("override", False)))
        except registry.DuplicateToolError as exc:
            raise ToolDefinitionError(str(exc)) from exc
    return tool


@overload
def function(fn: F, /) -> F: ...
@overload
def function(fn: None = None, /, **settings: Any) -> Callable[[F], F]: ...
def function(fn: Callable[..., Any] | None = None, /, **settings: Any) -> Any:
    """Expose a function to the model as a tool; see docs/tool-authoring.md.

    Returns ``fn`` itself with ``fn._agent_tool`` set to its :class:`FunctionTool`
    (absent when ``available_if`` kept the tool out of the registry).
    """

    def decorate(target: F) -> F:
        tool = _build_and_register_tool(target, **settings)
        if tool is not None:
            # SLF001: the framework's marker on a function it wraps.
            target._agent_tool = tool  # type: ignore[attr-defined]  # noqa: SLF001
        return target

    if fn is not None:
        return decorate(fn)  # type: ignore[arg-type]
    return decorate
