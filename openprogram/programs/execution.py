"""``FunctionTool``: an ``@function`` def running as an :class:`AgentTool`.

``execute`` is a fixed pipeline; every failure becomes an ``is_error`` result
the model can act on, and nothing a tool does can take the turn down:

1. parse the arguments (a JSON string or a dict);
2. validate them with the pydantic model built from the signature (the body
   never runs on invalid input; the error names the field);
3. ask for approval when ``requires_approval`` says so;
4. return a cached result when ``cache`` is on and these arguments were seen;
5. run the body: async bodies are awaited, sync bodies run in a worker thread
   so the event loop never blocks, both under the timeout budget and raced
   against the cancel event;
6. normalise the return value and cap it (head+tail, persist the full text).

Injected parameters, when the function declares them: ``on_update`` (a plain
``callable(str)``, safe from any thread), ``timeout`` (the clamped budget in
seconds) and ``cancel``. An async body gets the caller's ``asyncio.Event``; a
sync body runs on another thread, so it gets a ``threading.Event`` that is set
at the same moment (poll ``cancel.is_set()`` or ``cancel.wait(seconds)``). A
sync body cannot be killed: after a timeout or cancel the call returns at once
and the thread is left to notice its event.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import inspect
import json
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from pydantic import ValidationError

from openprogram.agent.types import AgentTool, AgentToolResult, OnUpdate
from openprogram.programs._approval import _evaluate_approval, tool_requires_approval
from openprogram.programs._cache import ResultCache, canonical_arguments
from openprogram.programs._streaming import UpdateStream
from openprogram.programs.results import _normalize_result, cap_result_text
from openprogram.programs.schema import ToolSignature
from openprogram.security.redact import redact_server_paths

__all__ = ["FunctionTool", "tool_requires_approval"]

_log = logging.getLogger(__name__)
_CANCEL_GRACE_S = 0.5
"""How long a cancelled async body may take to unwind before the call returns anyway."""

_Ending = Literal["done", "cancelled", "timeout"]


class _InvalidArguments(Exception):
    pass


class _BodyExited(Exception):
    """A body raised SystemExit; re-raised as this so it cannot stop the server."""


async def _contain_exit(body: Awaitable[Any]) -> Any:
    try:
        return await body
    except SystemExit as exc:
        raise _BodyExited(exc.code) from None


def _has_required_param(fn: Callable[..., Any], name: str) -> bool:
    param = inspect.signature(fn).parameters.get(name)
    return param is not None and param.default is inspect.Parameter.empty


def _clamp(value: float, low: float | None, high: float | None) -> float:
    if low is not None:
        value = max(low, value)
    if high is not None:
        value = min(high, value)
    return value


def _schema_validator(schema: dict[str, Any]) -> Any:
    # Imported here: jsonschema costs ~60 ms and only **kwargs tools need it.
    import jsonschema

    return jsonschema.Draft202012Validator(schema)


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


class FunctionTool(AgentTool):
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
            _schema_validator(self.parameters) if signature.accepts_var_keyword else None
        )
        self._cache = ResultCache(ttl=self.cache_ttl) if self.cache else None

    async def execute(
        self,
        call_id: str,
        args: dict[str, Any] | str,
        cancel: asyncio.Event | None = None,
        on_update: OnUpdate | None = None,
    ) -> AgentToolResult:
        started = time.perf_counter()
        result = await self._run_pipeline(call_id, args, cancel, on_update)
        result.duration_ms = (time.perf_counter() - started) * 1000
        return result

    def _error(self, text: str, *, call_id: str) -> AgentToolResult:
        # No absolute server path reaches the model or the chat (security/redact.py).
        capped = cap_result_text(redact_server_paths(text), tool=self, call_id=call_id)
        return AgentToolResult(
            content=capped.text,
            is_error=True,
            truncated=capped.truncated,
            dropped_chars=capped.dropped_chars,
            full_result_path=capped.full_result_path,
        )

    async def _run_pipeline(
        self,
        call_id: str,
        raw_args: dict[str, Any] | str,
        cancel: asyncio.Event | None,
        on_update: OnUpdate | None,
    ) -> AgentToolResult:
        try:
            kwargs, plain_args = self._validate(self._parse(raw_args))
        except _InvalidArguments as exc:
            return self._error(str(exc), call_id=call_id)

        decision = await _evaluate_approval(self, call_id=call_id, args=plain_args)
        if not decision.approved:
            reason = f": {decision.reason}" if decision.reason else ""
            return self._error(
                f"The user denied the call to {self.name!r}{reason}. It was not run.",
                call_id=call_id,
            )

        cache_key = (self.name, canonical_arguments(plain_args))
        if self._cache is not None and (hit := self._cache.get(cache_key)) is not None:
            return dataclasses.replace(hit)

        result = await self._run_body(call_id, kwargs, cancel, on_update)
        if self._cache is not None and not result.is_error:
            self._cache.put(cache_key, dataclasses.replace(result))
        return result

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
        if self._schema_validator is not None:
            errors = sorted(self._schema_validator.iter_errors(args), key=lambda e: list(e.path))
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

    def _budget(self, kwargs: dict[str, Any]) -> float | None:
        requested = kwargs.get("timeout") if self.llm_controls_timeout else None
        budget = requested if requested is not None else self.timeout
        if budget is None:
            return None
        return float(_clamp(float(budget), self.timeout_min, self.timeout_max))

    async def _run_body(
        self,
        call_id: str,
        kwargs: dict[str, Any],
        cancel: asyncio.Event | None,
        on_update: OnUpdate | None,
    ) -> AgentToolResult:
        loop = asyncio.get_running_loop()
        cancel_event = cancel if cancel is not None else asyncio.Event()
        thread_cancel = threading.Event()
        stream = UpdateStream(
            loop=loop,
            capacity=self.stream_capacity_chars or self.max_result_chars,
            consumer=on_update,
            tool_name=self.name,
        )
        budget = self._budget(kwargs)
        injected = self.signature.injected
        if "cancel" in injected:
            kwargs["cancel"] = cancel_event if self.is_async else thread_cancel
        if "on_update" in injected:
            kwargs["on_update"] = stream.emit
        if budget is not None and ("timeout" in injected or self.llm_controls_timeout):
            kwargs["timeout"] = budget
        elif "timeout" in injected and self._timeout_required:
            kwargs["timeout"] = None  # no budget anywhere: tell the body so

        if self.is_async:
            body = _contain_exit(self.fn(**kwargs))
        else:
            body = _contain_exit(asyncio.to_thread(functools.partial(self.fn, **kwargs)))
        try:
            if cancel is None and budget is None:
                ending, value = await _await_plainly(body, thread_cancel)
            else:
                ending, value = await _race(body, cancel_event, thread_cancel, budget)
            if inspect.isawaitable(value):  # a sync def that returned a coroutine
                value = await value
        except Exception as exc:
            await stream.flush()
            _log.exception("tool %r (call %r) raised", self.name, call_id)
            kind = "SystemExit" if isinstance(exc, _BodyExited) else type(exc).__name__
            return self._error(f"{kind}: {exc}", call_id=call_id)
        await stream.flush()
        if ending == "timeout":
            return self._error(
                f"Tool {self.name!r} timed out after {budget:g} s" + _partial(stream),
                call_id=call_id,
            )
        if ending == "cancelled":
            return self._error(
                f"Tool {self.name!r} was cancelled" + _partial(stream), call_id=call_id
            )
        return self._finish(value, stream=stream, call_id=call_id)

    def _finish(self, value: Any, *, stream: UpdateStream, call_id: str) -> AgentToolResult:
        try:
            text, details, persist = _normalize_result(value)
        except Exception as exc:
            _log.exception("tool %r returned a value that cannot be shown", self.name)
            return self._error(f"{type(exc).__name__}: {exc}", call_id=call_id)
        if not text and len(stream.tail):
            text = stream.tail.text()  # a tool that only streamed: its output is the result
        capped = cap_result_text(text, tool=self, call_id=call_id, persist=persist)
        returned = value if isinstance(value, AgentToolResult) else None
        return AgentToolResult(
            content=capped.text,
            is_error=returned.is_error if returned else False,
            details=details,
            truncated=capped.truncated,
            dropped_chars=capped.dropped_chars,
            full_result_path=capped.full_result_path,
            attachments=list(returned.attachments) if returned else [],
        )


async def _await_plainly(
    body: Awaitable[Any], thread_cancel: threading.Event
) -> tuple[_Ending, Any]:
    """No budget and no cancel event to watch: just await (the fast path)."""
    try:
        return "done", await body
    except asyncio.CancelledError:
        thread_cancel.set()  # execute() itself was cancelled: tell a sync body
        raise


async def _race(
    body: Awaitable[Any],
    cancel_event: asyncio.Event,
    thread_cancel: threading.Event,
    budget: float | None,
) -> tuple[_Ending, Any]:
    """Await ``body`` unless the budget runs out or ``cancel_event`` fires first."""
    task = asyncio.ensure_future(body)
    cancel_wait = asyncio.ensure_future(cancel_event.wait())
    try:
        done, _ = await asyncio.wait(
            {task, cancel_wait}, timeout=budget, return_when=asyncio.FIRST_COMPLETED
        )
    except GeneratorExit:
        # The loop is closing this coroutine: stop the body, but await nothing more.
        _abandon(task, cancel_wait, thread_cancel)
        raise
    except asyncio.CancelledError:
        # execute() itself was cancelled (the turn stopped): stop the body too.
        _abandon(task, cancel_wait, thread_cancel)
        await asyncio.wait({task}, timeout=_CANCEL_GRACE_S)
        raise
    cancel_wait.cancel()
    if task in done:
        return "done", task.result()
    if cancel_wait not in done:
        cancel_event.set()  # a timeout cancels the call like Stop does
    _abandon(task, cancel_wait, thread_cancel)
    await asyncio.wait({task}, timeout=_CANCEL_GRACE_S)
    return ("cancelled" if cancel_wait in done else "timeout"), None


def _abandon(
    task: asyncio.Future[Any], cancel_wait: asyncio.Future[Any], thread_cancel: threading.Event
) -> None:
    cancel_wait.cancel()
    thread_cancel.set()
    task.cancel()
    task.add_done_callback(_consume_outcome)


def _partial(stream: UpdateStream) -> str:
    return f"\nOutput so far:\n{stream.tail.text()}" if len(stream.tail) else ""


def _consume_outcome(task: asyncio.Future[Any]) -> None:
    # A body that outlived its call: read its outcome so asyncio does not warn.
    if not task.cancelled():
        task.exception()
