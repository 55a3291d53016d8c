"""``FunctionTool``: an ``@function`` def running as an :class:`AgentTool`.

Only what is specific to a Python function lives here:

1. parse the arguments (a JSON string or a dict), drop the nulls that mean "not
   given" (:mod:`openprogram.programs.arguments`, the rule every kind of tool shares;
   done here too because a library user may call ``execute`` directly) and validate
   them with the pydantic model built from the signature (the body never runs on
   invalid input; the error names the field);
2. bind them, injecting the parameters the function declares: ``on_update`` (a plain
   ``callable(str)``, safe from any thread), ``timeout`` (the clamped budget in
   seconds) and ``cancel`` (an async body gets the caller's ``asyncio.Event``; a sync
   body, which runs in a worker thread so the event loop never blocks, gets a
   ``threading.Event`` set at the same moment);
3. hand the call to :func:`openprogram.programs.call_policy.run_with_policy`, which
   applies approval, the cache, the timeout budget and cancel, the bounded stream and
   the result cap — the same pipeline every other kind of tool goes through.

A sync body cannot be killed: after a timeout or cancel the call returns at once and
the thread is left to notice its event.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import threading
import time
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from openprogram.agent.types import AgentTool, AgentToolResult, OnUpdate
from openprogram.programs._approval import tool_requires_approval
from openprogram.programs.arguments import arguments_validator, drop_unset_nulls
from openprogram.programs.call_policy import PolicyTool, error_result, run_with_policy
from openprogram.programs.schema import ToolSignature

__all__ = ["FunctionTool", "tool_requires_approval"]


class _InvalidArguments(Exception):
    pass


def _has_required_param(fn: Callable[..., Any], name: str) -> bool:
    param = inspect.signature(fn).parameters.get(name)
    return param is not None and param.default is inspect.Parameter.empty


def _describe_validation_error(tool_name: str, exc: ValidationError) -> str:
    problems = []
    for error in exc.errors(include_url=False):
        field = ".".join(str(part) for part in error["loc"]) or "(arguments)"
        if error["type"] == "missing":
            problems.append(f"missing required field {field!r}")
        elif error["type"] == "extra_forbidden":
            problems.append(f"unexpected field {field!r}")
        else:
            got = repr(error.get("input"))
            got = got if len(got) <= 80 else got[:77] + "..."
            problems.append(f"field {field!r}: {error['msg']} (got {got})")
    return f"Invalid arguments for {tool_name!r}: " + "; ".join(problems)


class FunctionTool(PolicyTool, AgentTool):
    """An :class:`AgentTool` whose body is a Python callable (sync or async)."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        signature: ToolSignature,
        **tool_settings: Any,
    ) -> None:
        super().__init__(**tool_settings)
        self.fn = fn
        self.signature = signature
        self.is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None)  # noqa: B004 - async callable objects
        )
        self.llm_controls_timeout = "timeout" in signature.field_names
        self._timeout_required = _has_required_param(fn, "timeout")
        # **kwargs bodies take whatever the explicit parameters= schema allows.
        self._schema_validator = (
            arguments_validator(self.parameters) if signature.accepts_var_keyword else None
        )

    async def execute(
        self,
        call_id: str,
        args: dict[str, Any] | str,
        cancel: asyncio.Event | None = None,
        on_update: OnUpdate | None = None,
    ) -> AgentToolResult:
        started = time.perf_counter()
        try:
            parsed = drop_unset_nulls(self.parameters, self._parse(args))
            kwargs, plain_args = self._validate(parsed)
        except _InvalidArguments as exc:
            result = error_result(self, str(exc), call_id=call_id)
            result.duration_ms = (time.perf_counter() - started) * 1000
            return result
        return await run_with_policy(
            self,
            call_id=call_id,
            args=plain_args,
            cancel=cancel,
            on_update=on_update,
            body=functools.partial(self._body, kwargs),
            requested_timeout=kwargs.get("timeout") if self.llm_controls_timeout else None,
        )

    def _parse(self, raw: dict[str, Any] | str) -> dict[str, Any]:
        if isinstance(raw, str):
            if not raw.strip():
                return {}
            try:
                raw = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise _InvalidArguments(
                    f"Invalid JSON arguments for {self.name!r}: {exc}. "
                    "Send the arguments as one JSON object."
                ) from None
        if not isinstance(raw, dict):
            raise _InvalidArguments(
                f"Arguments for {self.name!r} must be a JSON object, got {type(raw).__name__}"
            )
        return raw

    def _validate(self, args: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """``(kwargs for the body, JSON-safe arguments for approval and the cache key)``."""
        if self.signature.accepts_var_keyword:
            # An invalid parameters= schema checks nothing (logged when it was built).
            validator = self._schema_validator
            errors = (
                sorted(validator.iter_errors(args), key=lambda e: list(e.path)) if validator else []
            )
            if errors:
                problems = "; ".join(
                    f"field {'.'.join(map(str, e.path)) or '(arguments)'!r}: {e.message}"
                    for e in errors
                )
                raise _InvalidArguments(f"Invalid arguments for {self.name!r}: {problems}")
            return dict(args), args
        try:
            model = self.signature.arguments_model.model_validate(args)
        except ValidationError as exc:
            raise _InvalidArguments(_describe_validation_error(self.name, exc)) from None
        kwargs = {name: getattr(model, name) for name in type(model).model_fields}
        return kwargs, model.model_dump(mode="json")

    async def _body(
        self,
        kwargs: dict[str, Any],
        on_update: OnUpdate,
        cancel: asyncio.Event,
        thread_cancel: threading.Event,
        budget: float | None,
    ) -> Any:
        """Bind and run the function: awaited if async, else in a worker thread."""
        kwargs = dict(kwargs)
        injected = self.signature.injected
        if "cancel" in injected:
            kwargs["cancel"] = cancel if self.is_async else thread_cancel
        if "on_update" in injected:
            kwargs["on_update"] = on_update
        if budget is not None and ("timeout" in injected or self.llm_controls_timeout):
            kwargs["timeout"] = budget
        elif "timeout" in injected and self._timeout_required:
            kwargs["timeout"] = None  # no budget anywhere: tell the body so
        if self.is_async:
            value = await self.fn(**kwargs)
        else:
            value = await asyncio.to_thread(functools.partial(self.fn, **kwargs))
        if inspect.isawaitable(value):  # a sync def that returned a coroutine
            value = await value
        return value
