"""``Agent``: ordinary classes whose chosen methods become tools.

A subclass defines ordinary methods. Every one of them (public or ``_private``,
sync or async; not dunders, static or class methods) gets call handling when
the class is defined: each call enters a scope (see
:mod:`~openprogram.agentic_programming.call_scope`). ``method_options`` configures
methods by name; only ``tool=True`` / ``as_tool=True`` makes one a tool, built
and registered when the agent is constructed (after its ``__init__``)::

    class ResearchAgent(Agent):
        method_options = {"research": {"tool": True, "toolset": ["research"]}}

        def research(self, topic: str) -> str:
            \"\"\"Research a topic.\"\"\"
            return self(topic)

Calling the agent, ``self(prompt)`` or ``await self.arun(prompt)``, runs the
model once through the dispatcher and returns its final text.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import types
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from openprogram.agent.context import get_turn
from openprogram.agent.types import AgentTool
from openprogram.agentic_programming.agent_method import (
    MethodOptions,
    build_method_tool,
    parse_method_options,
    scoped_method,
)
from openprogram.agentic_programming.agent_run import run_model
from openprogram.agentic_programming.call_scope import DEFAULT_MODEL
from openprogram.agentic_programming.call_state import Runtime
from openprogram.agentic_programming.context import Context, current_context
from openprogram.programs.decorator import ToolDefinitionError

__all__ = ["Agent"]


def _instance_function(class_function: Callable[..., Any]) -> Callable[..., Any]:
    """A per-instance copy of a scoped method, so ``agent.m._agent_tool`` is per instance."""
    if inspect.iscoroutinefunction(class_function):

        async def async_per_instance(self: Agent, *args: Any, **kwargs: Any) -> Any:
            return await class_function(self, *args, **kwargs)

        return functools.update_wrapper(async_per_instance, class_function)

    def per_instance(self: Agent, *args: Any, **kwargs: Any) -> Any:
        return class_function(self, *args, **kwargs)

    return functools.update_wrapper(per_instance, class_function)


def _is_ordinary_method(name: str, value: Any) -> bool:
    return (
        inspect.isfunction(value)
        and not (name.startswith("__") and name.endswith("__"))
        and not getattr(value, "_openprogram_scoped", False)
        and not hasattr(Agent, name)
    )


def _unscoped_methods(cls: type) -> dict[str, Callable[..., Any]]:
    """Ordinary methods ``cls`` resolves to that have no call handling yet.

    Those defined on ``cls`` itself, and those it inherits from plain mixins
    (Agent bases were handled when they were defined).
    """
    found: dict[str, Callable[..., Any]] = {}
    for klass in cls.__mro__:
        if klass is object or (klass is not cls and issubclass(klass, Agent)):
            continue
        for name, value in vars(klass).items():
            if name not in found and _is_ordinary_method(name, value):
                found[name] = value
    return {
        name: function
        for name, function in found.items()
        if inspect.getattr_static(cls, name) is function
    }


class _AgentMeta(type):
    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        # Tools are built after the subclass's own __init__, whatever it does,
        # so a forgotten super().__init__() cannot silently drop them.
        agent = super().__call__(*args, **kwargs)
        # SLF001: the metaclass installs its own class's method tools.
        agent._install_method_tools()  # noqa: SLF001
        return agent


class Agent(metaclass=_AgentMeta):
    """Base class for agents; see the module docstring and docs/agents.md."""

    method_options: ClassVar[Mapping[str, Mapping[str, Any]]] = {}
    model: str | None = None
    """The model this agent's runs use; None means the current turn's, else "offline"."""

    _parsed_options: ClassVar[dict[str, MethodOptions]] = {}
    _scoped_names: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, *, model: str | None = None) -> None:
        if model is not None:
            self.model = model

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, function in _unscoped_methods(cls).items():
            setattr(cls, name, scoped_method(function, name))
        cls._scoped_names = frozenset(
            name
            for klass in cls.__mro__
            for name, value in vars(klass).items()
            if getattr(value, "_openprogram_scoped", False)
        )
        options = cls.__dict__.get("method_options", cls.method_options)
        if not isinstance(options, Mapping):
            raise ToolDefinitionError(f"{cls.__qualname__}.method_options must be a dict")
        for method in options:
            if method not in cls._scoped_names:
                raise ToolDefinitionError(
                    f"{cls.__qualname__}.method_options names {method!r}, "
                    "which is not an ordinary method of the class"
                )
        cls._parsed_options = {
            method: parse_method_options(cls.__qualname__, method, raw)
            for method, raw in options.items()
        }

    def _install_method_tools(self) -> None:
        self._method_tools: dict[str, AgentTool] = {}
        for method, options in self._parsed_options.items():
            if not options.wants_tool:
                continue
            function = _instance_function(getattr(type(self), method))
            # An instance attribute shadows the class function: agent.m is this
            # bound copy from now on, and the tool calls the very same object.
            self.__dict__[method] = types.MethodType(function, self)
            tool = build_method_tool(self, options)
            if tool is not None:
                # SLF001: the framework's marker on a function it wraps.
                function._agent_tool = tool  # type: ignore[attr-defined]  # noqa: SLF001
                self._method_tools[method] = tool

    @property
    def method_tools(self) -> dict[str, AgentTool]:
        """This instance's method tools by method name (registered or not)."""
        return dict(getattr(self, "_method_tools", {}))

    @property
    def context(self) -> Context | None:
        """The Context of the method call running now (None outside any)."""
        return current_context.get()

    @property
    def runtime(self) -> Runtime:
        """What a run would use now: the current call's runtime, else the agent's."""
        ctx = current_context.get()
        if ctx is not None:
            return ctx.runtime
        turn = get_turn()
        turn_model = turn.model if turn is not None else None
        return Runtime(model=self.model or turn_model or DEFAULT_MODEL, turn=turn)

    async def arun(
        self,
        prompt: str,
        *,
        toolset: str | None = None,
        model: str | None = None,
        allow: list[str] | None = None,
        deny: list[str] | None = None,
        system_prompt: str | None = None,
        max_steps: int | None = None,
    ) -> str:
        """Run the model once on ``prompt`` with tools; return its final text.

        Tools: the full exposed set unless ``toolset`` (a preset, a profile or
        ``"none"``) or ``allow``/``deny`` narrow it.
        """
        return await run_model(
            prompt,
            model=model or self.runtime.model,
            toolset=toolset,
            allow=allow,
            deny=deny,
            system_prompt=system_prompt,
            max_steps=max_steps,
        )

    def __call__(self, prompt: str, **options: Any) -> str:
        """Sync form of :meth:`arun`, for sync methods (they run off the event loop)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError(
                f"{type(self).__name__}(prompt) was called on a running event loop, which it "
                "would block; use `await self.arun(prompt)` in async methods"
            )
        ctx = current_context.get()
        home = ctx.loop if ctx is not None else None
        if home is not None and home.is_running():
            # A sync method running as a tool (in a worker thread): the run goes to
            # the turn's own loop, where its provider clients, hooks and events live.
            future = asyncio.run_coroutine_threadsafe(self.arun(prompt, **options), home)
            return future.result()
        return asyncio.run(self.arun(prompt, **options))
