"""One streamed model call through litellm: text pieces out, tool calls assembled.

:func:`stream_chat` is the only way the agent loop talks to a model, the offline
model included (served in process with the same wire request; litellm's per-call
work would cost more than the whole scripted reply). Transient failures are retried
before anything has been streamed; after retries, or for failures that cannot
succeed on retry, it raises :class:`~openprogram.providers.retry.ProviderError`.
Setting ``cancel`` ends the stream quietly at the next chunk.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from openprogram.agent.types import AgentTool, Message, ToolCall
from openprogram.providers._litellm_setup import load_litellm_async
from openprogram.providers.offline import offline_stream
from openprogram.providers.retry import ProviderError, RetryPolicy, classify_provider_error
from openprogram.providers.routing import connection_kwargs, is_offline, litellm_model_name

__all__ = ["ProviderDelta", "messages_to_wire", "stream_chat"]

_T = TypeVar("_T")
_DEFAULT_TIMEOUT = 120.0


@dataclass
class ProviderDelta:
    """A streamed text piece, or (``done=True``) the end of the call with its tool calls."""

    text: str = ""
    done: bool = False
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    finish_reason: str | None = None


def _arguments_text(arguments: str | dict[str, Any]) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def messages_to_wire(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Chat Completions message dicts (the shape litellm takes for every provider)."""
    wire: list[dict[str, Any]] = []
    for message in messages:
        item: dict[str, Any] = {"role": message.role, "content": message.content}
        if message.tool_calls:
            item["content"] = message.content or None
            item["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": _arguments_text(call.arguments)},
                }
                for call in message.tool_calls
            ]
        if message.tool_call_id is not None:
            item["tool_call_id"] = message.tool_call_id
        if message.name is not None and message.role == "tool":
            item["name"] = message.name
        wire.append(item)
    return wire


class _ToolCallAssembler:
    """Joins tool-call fragments that arrive spread over many chunks, keyed by index."""

    def __init__(self) -> None:
        self._calls: dict[int, dict[str, Any]] = {}

    def add(self, fragments: Sequence[Any]) -> None:
        for position, fragment in enumerate(fragments):
            index = getattr(fragment, "index", None)
            index = position if index is None else index
            call = self._calls.setdefault(index, {"id": "", "name": "", "arguments": []})
            if getattr(fragment, "id", None):
                call["id"] = fragment.id
            function = getattr(fragment, "function", None)
            if function is not None:
                if getattr(function, "name", None):
                    call["name"] = function.name
                if getattr(function, "arguments", None):
                    call["arguments"].append(function.arguments)

    def calls(self) -> list[ToolCall]:
        return [
            ToolCall(
                id=call["id"] or f"call_{uuid.uuid4().hex[:12]}",
                name=call["name"],
                arguments="".join(call["arguments"]) or "{}",
            )
            for _, call in sorted(self._calls.items())
        ]


class _CancelRace:
    """Awaits things unless ``cancel`` is set first; one shared waiter for a whole stream."""

    def __init__(self, cancel: asyncio.Event | None) -> None:
        self._cancel = cancel
        self._stop: asyncio.Future[Any] | None = None

    async def run(self, awaitable: Awaitable[_T]) -> tuple[bool, _T | None]:
        """``(True, result)``, or ``(False, None)`` when cancelled before it finished."""
        if self._cancel is None:
            return True, await awaitable
        if self._cancel.is_set():
            asyncio.ensure_future(awaitable).cancel()
            return False, None
        if self._stop is None:
            self._stop = asyncio.ensure_future(self._cancel.wait())
        work = asyncio.ensure_future(awaitable)
        await asyncio.wait({work, self._stop}, return_when=asyncio.FIRST_COMPLETED)
        if work.done():
            return True, work.result()
        work.cancel()
        return False, None

    def close(self) -> None:
        if self._stop is not None:
            self._stop.cancel()


def _usage(chunk: Any) -> dict[str, int]:
    """Token counts of a chunk that carries usage; cached prompt tokens when reported."""
    usage = getattr(chunk, "usage", None)
    if not usage:
        return {}
    counts = {
        key: int(getattr(usage, key, 0) or 0)
        for key in ("prompt_tokens", "completion_tokens", "total_tokens")
    }
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) or getattr(usage, "cache_read_input_tokens", 0)
    counts["cached_tokens"] = int(cached or 0)
    return counts


def _error_message(error: BaseException, model: str) -> str:
    text = getattr(error, "message", None) or str(error) or type(error).__name__
    return f"model {model!r}: {text}"


async def stream_chat(
    *,
    model: str,
    messages: Sequence[Message],
    tools: Sequence[AgentTool] = (),
    cancel: asyncio.Event | None = None,
    retry: RetryPolicy | None = None,
    timeout: float | None = None,
    api_base: str | None = None,
    api_key: str | None = None,
) -> AsyncIterator[ProviderDelta]:
    """Stream one model reply. The last item has ``done=True`` unless cancelled first."""
    if is_offline(model):
        wire_tools = [tool.to_wire() for tool in tools]
        async for delta in offline_stream(messages_to_wire(messages), wire_tools, cancel):
            yield delta
        return
    litellm = await load_litellm_async()
    retry = retry or RetryPolicy.from_env()
    kwargs: dict[str, Any] = {
        "model": litellm_model_name(model),
        "messages": messages_to_wire(messages),
        "stream": True,
        "stream_options": {"include_usage": True},
        # Retries are ours (with our backoff and error kinds), not litellm's or the SDK's.
        "num_retries": 0,
        "max_retries": 0,
        "timeout": timeout
        or float(os.environ.get("OPENPROGRAM_PROVIDER_TIMEOUT", _DEFAULT_TIMEOUT)),
        **connection_kwargs(model, api_base=api_base, api_key=api_key),
    }
    if tools:
        kwargs["tools"] = [tool.to_wire() for tool in tools]
    race = _CancelRace(cancel)
    try:
        async for delta in _attempts(litellm, kwargs, model, retry, race):
            yield delta
    finally:
        race.close()


async def _attempts(
    litellm: Any, kwargs: dict[str, Any], model: str, retry: RetryPolicy, race: _CancelRace
) -> AsyncIterator[ProviderDelta]:
    attempt = 0
    while True:
        attempt += 1
        streamed = False
        try:
            finished, response = await race.run(litellm.acompletion(**kwargs))
            if not finished:
                return
            assembler = _ToolCallAssembler()
            usage: dict[str, int] = {}
            finish_reason: str | None = None
            chunks = aiter(response)
            while True:
                finished, chunk = await race.run(anext(chunks, None))
                if not finished:
                    return
                if chunk is None:
                    break
                usage = _usage(chunk) or usage
                for choice in getattr(chunk, "choices", None) or ():
                    delta = choice.delta
                    finish_reason = choice.finish_reason or finish_reason
                    if getattr(delta, "tool_calls", None):
                        assembler.add(delta.tool_calls)
                    if getattr(delta, "content", None):
                        streamed = True
                        yield ProviderDelta(text=delta.content)
            yield ProviderDelta(
                done=True, tool_calls=assembler.calls(), usage=usage, finish_reason=finish_reason
            )
            return
        except Exception as error:
            kind = classify_provider_error(error)
            # A retry after text went out would repeat that text to the user.
            if kind == "provider_unavailable" and not streamed and attempt < retry.attempts:
                finished, _ = await race.run(asyncio.sleep(retry.delay_before(attempt + 1)))
                if not finished:
                    return
                continue
            raise ProviderError(kind, _error_message(error, model), attempts=attempt) from error
