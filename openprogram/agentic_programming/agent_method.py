"""Agent methods: their options, the scope every call enters, and their tools.

``method_options`` maps a method name to the same settings ``@function`` takes,
plus ``tool`` / ``as_tool`` (explicit registration; without it a method is never
a tool) and ``register_globally``. :func:`parse_method_options` checks them when
the class is defined, so a typo fails at import, naming the class, the method
and the option.

:func:`scoped_method` is the call handling the Agent class installs on every
ordinary method; :func:`build_method_tool` turns one bound method into an
AgentTool through the same ``_build_and_register_tool`` path as ``@function``.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from openprogram.agent.types import AgentTool, AgentToolResult, OnUpdate
from openprogram.agentic_programming.call_scope import CallScope
from openprogram.agentic_programming.call_state import (
    CancelToken,
    ToolCallSite,
    current_tool_call_site,
)
from openprogram.agentic_programming.context import current_context
from openprogram.programs import registry
from openprogram.programs.decorator import (
    TOOL_SETTINGS,
    ToolDefinitionError,
    _build_and_register_tool,
)


class MethodOwner(Protocol):
    """What this module needs of an Agent: it never imports the Agent class (no circle)."""

    model: str | None
    _method_tools: dict[str, AgentTool]


__all__ = [
    "METHOD_OPTION_KEYS",
    "MethodOptions",
    "build_method_tool",
    "parse_method_options",
    "scoped_method",
]

logger = logging.getLogger(__name__)

_AGENT_ONLY = frozenset({"tool", "as_tool"})
METHOD_OPTION_KEYS: frozenset[str] = (TOOL_SETTINGS - {"source"}) | _AGENT_ONLY
"""``@function``'s settings (source is always "agent") plus tool / as_tool."""


@dataclass(frozen=True)
class MethodOptions:
    """One method's parsed ``method_options`` entry."""

    method: str
    wants_tool: bool
    settings: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments for ``_build_and_register_tool`` (tool/as_tool removed)."""
    expose_hint: Any = None
    """A non-bool ``expose`` value (the spec's ``"io"``): the tool is exposed and
    the value is kept on ``tool.expose_hint`` as metadata."""


def parse_method_options(owner: str, method: str, raw: Any) -> MethodOptions:
    """Check one ``method_options`` entry; raise ToolDefinitionError naming what is wrong."""
    where = f"{owner}.method_options[{method!r}]"
    if not isinstance(raw, Mapping):
        raise ToolDefinitionError(f"{where} must be a dict of options, got {type(raw).__name__}")
    unknown = sorted(set(raw) - METHOD_OPTION_KEYS)
    if unknown:
        raise ToolDefinitionError(
            f"{where}: unknown option(s) {', '.join(map(repr, unknown))}; "
            f"expected one of {', '.join(sorted(METHOD_OPTION_KEYS))}"
        )
    flags = {key: raw[key] for key in _AGENT_ONLY if key in raw}
    for key, value in flags.items():
        if not isinstance(value, bool):
            raise ToolDefinitionError(f"{where}: {key}={value!r} must be True or False")
    if len(set(flags.values())) > 1:
        raise ToolDefinitionError(f"{where}: tool and as_tool disagree ({flags!r})")
    settings = {key: value for key, value in raw.items() if key not in _AGENT_ONLY}
    expose_hint = None
    if "expose" in settings and not isinstance(settings["expose"], bool):
        expose_hint = settings["expose"]
        settings["expose"] = bool(expose_hint)
    return MethodOptions(
        method=method,
        wants_tool=any(flags.values()),
        settings=settings,
        expose_hint=expose_hint,
    )


# -- call scopes --------------------------------------------------------------------


def _inputs_binder(fn: Callable[..., Any]) -> Callable[..., dict[str, Any]]:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        signature = None
    plain = signature is not None and all(
        p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in signature.parameters.values()
    )
    names = tuple(signature.parameters) if signature is not None else ()

    def bind(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        # Fast path for the usual (self, a, b=...) signature: no inspect.bind per call.
        if plain and len(args) <= len(names) and not kwargs.keys() - names[len(args) :]:
            return {**dict(zip(names[1:], args[1:], strict=False)), **kwargs}
        if signature is not None:
            try:
                bound = signature.bind_partial(*args, **kwargs)
            except TypeError:
                pass  # the call itself will fail inside the scope and be recorded
            else:
                return {k: v for i, (k, v) in enumerate(bound.arguments.items()) if i > 0}
        return {"args": args[1:], "kwargs": kwargs}

    return bind


def _scope_for(
    agent: MethodOwner, label: str, method_name: str, inputs: dict[str, Any]
) -> CallScope:
    tool = getattr(agent, "_method_tools", {}).get(method_name)
    return CallScope(
        method=label,
        inputs=inputs,
        tool_name=tool.name if tool is not None else None,
        model=getattr(agent, "model", None),
    )


def scoped_method(fn: Callable[..., Any], method_name: str) -> Callable[..., Any]:
    """Wrap an Agent method so every call, sync or async, runs in its own scope."""
    bind = _inputs_binder(fn)
    # "Class.method" of the defining class, so an override and its super() call differ.
    label = ".".join(fn.__qualname__.split(".")[-2:])

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def async_call(self: MethodOwner, *args: Any, **kwargs: Any) -> Any:
            scope = _scope_for(self, label, method_name, bind((self, *args), kwargs))
            scope.enter()
            try:
                result = await fn(self, *args, **kwargs)
            except BaseException as exc:
                await scope.aexit(error=exc)
                raise
            await scope.aexit(result)
            return result

        # SLF001: the framework's marker on a function it wraps.
        async_call._openprogram_scoped = True  # type: ignore[attr-defined]  # noqa: SLF001
        return async_call

    @functools.wraps(fn)
    def call(self: MethodOwner, *args: Any, **kwargs: Any) -> Any:
        scope = _scope_for(self, label, method_name, bind((self, *args), kwargs))
        scope.enter()
        try:
            result = fn(self, *args, **kwargs)
        except BaseException as exc:
            scope.exit(error=exc)
            raise
        scope.exit(result)
        return result

    # SLF001: the framework's marker on a function it wraps.
    call._openprogram_scoped = True  # type: ignore[attr-defined]  # noqa: SLF001
    return call


# -- tools --------------------------------------------------------------------------


async def _cancel_when_set(event: asyncio.Event, token: CancelToken) -> None:
    await event.wait()
    token.cancel("the call was stopped or timed out")


def _install_call_site(tool: AgentTool) -> None:
    """Make the model's call of ``tool`` reach the method's scope.

    The FunctionTool stays what the registry and policy layers see; only its
    ``execute`` is wrapped (on the instance) to publish the call id and a cancel
    token derived from the calling scope, and to turn the call's cancel event —
    set on Stop or timeout — into cancellation of every nested call.
    """
    inner = tool.execute

    async def execute(
        call_id: str,
        args: dict[str, Any] | str,
        cancel: asyncio.Event | None = None,
        on_update: OnUpdate | None = None,
    ) -> AgentToolResult:
        parent = current_context.get()
        token = CancelToken(parent.token if parent is not None else None)
        cancel = cancel if cancel is not None else asyncio.Event()
        loop = asyncio.get_running_loop()
        watcher = loop.create_task(_cancel_when_set(cancel, token))
        reset = current_tool_call_site.set(ToolCallSite(call_id, tool.name, token, loop))
        try:
            return await inner(call_id, args, cancel, on_update)
        finally:
            current_tool_call_site.reset(reset)
            watcher.cancel()
            token.cancel(f"the call {call_id!r} of {tool.name!r} ended")
            token.detach()

    tool.execute = execute  # type: ignore[method-assign]


def _owner_key(agent: MethodOwner) -> str:
    cls = type(agent)
    return f"{cls.__module__}.{cls.__qualname__}"


def _replaces_same_class(name: str, agent: MethodOwner) -> bool:
    existing = registry.get(name)
    return existing is not None and getattr(existing, "agent_class", None) == _owner_key(agent)


def build_method_tool(agent: MethodOwner, options: MethodOptions) -> AgentTool | None:
    """Build (and unless ``register_globally=False``, register) one method's tool.

    Returns None when ``available_if`` rules it out; the method keeps its scope.
    A second instance of the same Agent class takes over the tool name from the
    first (logged); any other holder of the name makes this raise.
    """
    bound = getattr(agent, options.method)
    settings = dict(options.settings, source="agent")
    name = settings.get("name", options.method)
    if settings.get("register_globally", True) and _replaces_same_class(name, agent):
        logger.warning(
            "a new %s instance takes over the tool %r from an earlier instance",
            type(agent).__name__,
            name,
        )
        settings["override"] = True
    tool = _build_and_register_tool(bound, **settings)
    if tool is None:
        return None
    tool.agent_class = _owner_key(agent)  # type: ignore[attr-defined]
    tool.expose_hint = options.expose_hint  # type: ignore[attr-defined]
    _install_call_site(tool)
    return tool
