"""One streamed model call: text pieces out, tool calls assembled.

:func:`stream_chat` is the only way the agent loop talks to a model, the offline
model included (served in process with the same wire request; litellm's per-call
work would cost more than the whole scripted reply). Transient failures are retried
before anything has been streamed; after retries, or for failures that cannot
succeed on retry, it raises :class:`~openprogram.providers.retry.ProviderError`.
Setting ``cancel`` ends the stream quietly at once.

Who sends the request: for a model litellm sends as a plain OpenAI Chat Completions
call (:mod:`openprogram.providers.openai_route`, resolved once per model and
connection), OpenProgram sends and reads it (:mod:`openprogram.providers.openai_http`);
``OPENPROGRAM_OPENAI_TRANSPORT=litellm`` and every other provider use litellm end to
end: its ``acompletion``, its reply read through its own stream wrapper.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, TypeVar

from openprogram.agent.types import AgentTool, Message, ToolCall
from openprogram.providers._litellm_setup import load_litellm_async
from openprogram.providers.offline import offline_stream
from openprogram.providers.openai_route import OpenAIRoute, openai_route
from openprogram.providers.openai_stream import ChunkAssembler, litellm_stream_texts
from openprogram.providers.retry import (
    MAX_RETRY_AFTER,
    ProviderError,
    RetryPolicy,
    classify_provider_error,
    retry_after_seconds,
)
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


class _Stopped:
    """Queue marks of :meth:`_CancelRace.stream`."""


_CANCELLED, _ENDED = _Stopped(), _Stopped()


class _Failed:
    def __init__(self, error: Exception) -> None:
        self.error = error


async def _read_into(source: AsyncIterator[str], queue: asyncio.Queue[Any]) -> None:
    try:
        async for text in source:
            queue.put_nowait(text)
    except Exception as error:
        queue.put_nowait(_Failed(error))
    else:
        queue.put_nowait(_ENDED)


class _CancelRace:
    """Awaits things unless ``cancel`` is set first; one shared waiter for a whole stream."""

    def __init__(self, cancel: asyncio.Event | None) -> None:
        self._cancel = cancel
        self._stop: asyncio.Future[Any] | None = None
        self.cancelled = False

    def _stop_waiter(self) -> asyncio.Future[Any]:
        assert self._cancel is not None
        if self._stop is None:
            self._stop = asyncio.ensure_future(self._cancel.wait())
        return self._stop

    async def run(self, awaitable: Awaitable[_T]) -> tuple[bool, _T | None]:
        """``(True, result)``, or ``(False, None)`` when cancelled before it finished."""
        if self._cancel is None:
            return True, await awaitable
        if self._cancel.is_set():
            asyncio.ensure_future(awaitable).cancel()
            self.cancelled = True
            return False, None
        stop = self._stop_waiter()
        work = asyncio.ensure_future(awaitable)
        await asyncio.wait({work, stop}, return_when=asyncio.FIRST_COMPLETED)
        if work.done():
            return True, work.result()
        work.cancel()
        self.cancelled = True
        return False, None

    async def stream(self, source: AsyncIterator[str]) -> AsyncIterator[str]:
        """``source``'s texts until it ends (its error raised here) or ``cancel`` is set.

        One reader task per stream feeds a queue (rather than a task and a wait per
        piece: that was a good part of a streamed piece's cost), and texts that queued
        up while the consumer was busy come out joined, so a loaded server handles
        fewer, larger pieces instead of falling further behind.
        """
        if self._cancel is None:
            async for text in source:
                yield text
            return
        queue: asyncio.Queue[Any] = asyncio.Queue()
        reader = asyncio.ensure_future(_read_into(source, queue))
        stop = self._stop_waiter()

        def on_cancel(_: object) -> None:
            queue.put_nowait(_CANCELLED)

        stop.add_done_callback(on_cancel)
        try:
            while True:
                item = await queue.get()
                texts = []
                while isinstance(item, str):
                    texts.append(item)
                    item = queue.get_nowait() if not queue.empty() else None
                if self._cancel.is_set():
                    self.cancelled = True
                    return
                if texts:
                    yield "".join(texts)
                if item is None:
                    continue
                if isinstance(item, _Failed):
                    raise item.error
                return  # ended, or cancelled
        finally:
            stop.remove_done_callback(on_cancel)
            if not reader.done():
                reader.cancel()
                await asyncio.wait({reader})

    def stopped(self) -> bool:
        """True once ``cancel`` is set (then the stream ends without its ``done`` item)."""
        if self._cancel is not None and self._cancel.is_set():
            self.cancelled = True
        return self.cancelled

    def on_stop(self, callback: Callable[[], object]) -> None:
        """Call ``callback`` as soon as ``cancel`` is set (at once if it already is)."""
        if self._cancel is None:
            return

        def stop(_: object) -> None:
            if self._cancel is not None and self._cancel.is_set():  # not close()'s cancel
                self.cancelled = True
                callback()

        self._stop_waiter().add_done_callback(stop)

    def close(self) -> None:
        if self._stop is not None:
            self._stop.cancel()


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
    wire_tools = [tool.to_wire() for tool in tools]
    if is_offline(model):
        async for delta in offline_stream(messages_to_wire(messages), wire_tools, cancel):
            yield delta
        return
    litellm = await load_litellm_async()
    retry = retry or RetryPolicy.from_env()
    timeout = timeout or float(os.environ.get("OPENPROGRAM_PROVIDER_TIMEOUT", _DEFAULT_TIMEOUT))
    connection = connection_kwargs(model, api_base=api_base, api_key=api_key)
    name = litellm_model_name(model)
    try:
        route = openai_route(
            litellm, name, api_base=connection.get("api_base"), api_key=connection.get("api_key")
        )
    except ValueError as error:  # a misspelt OPENPROGRAM_OPENAI_TRANSPORT: said, not raised
        raise ProviderError("provider_bad_request", str(error)) from error
    race = _CancelRace(cancel)
    if route is not None:
        # Imported here: aiohttp comes with litellm anyway, and an offline-only server needs neither.
        from openprogram.providers import openai_http

        body = openai_http.request_body(route, messages_to_wire(messages), wire_tools)
        start = _own_call(openai_http, route, body, timeout, race)
    else:
        kwargs: dict[str, Any] = {
            "model": name,
            "messages": messages_to_wire(messages),
            "stream": True,
            "stream_options": {"include_usage": True},
            # Retries are ours (with our backoff and error kinds), not litellm's or the SDK's.
            "num_retries": 0,
            "max_retries": 0,
            "timeout": timeout,
            **connection,
        }
        if wire_tools:
            kwargs["tools"] = wire_tools
        start = _litellm_call(litellm, kwargs, race)
    try:
        async for delta in _attempts(start, model, retry, race):
            yield delta
    finally:
        race.close()


_Start = Callable[[ChunkAssembler], Awaitable[AsyncIterator[str] | None]]
"""Sends one attempt's request; the reply's texts, or None when Stop came first."""


def _litellm_call(litellm: Any, kwargs: dict[str, Any], race: _CancelRace) -> _Start:
    async def start(assembler: ChunkAssembler) -> AsyncIterator[str] | None:
        finished, response = await race.run(litellm.acompletion(**kwargs))
        if not finished:
            return None
        return race.stream(litellm_stream_texts(response, assembler))

    return start


def _own_call(
    http: ModuleType, route: OpenAIRoute, body: bytes, timeout: float, race: _CancelRace
) -> _Start:
    async def start(assembler: ChunkAssembler) -> AsyncIterator[str] | None:
        finished, response = await race.run(http.open_stream(route, body, timeout))
        if not finished:
            return None
        assert response is not None
        # Stop fails the pending read (no reader task to cancel) and the stream closes.
        race.on_stop(lambda: response.content.set_exception(http.StreamStopped()))
        return http.stream_texts(response, assembler, timeout)

    return start


def _retry_delay(error: Exception, attempt: int, retry: RetryPolicy) -> float | None:
    """Seconds to wait before the next try, or None when the server asked for too long."""
    delay = retry.delay_before(attempt + 1)
    asked = retry_after_seconds(error)
    if asked is None:
        return delay
    return max(delay, asked) if asked <= MAX_RETRY_AFTER else None


async def _attempts(
    start: _Start, model: str, retry: RetryPolicy, race: _CancelRace
) -> AsyncIterator[ProviderDelta]:
    attempt = 0
    while True:
        attempt += 1
        streamed = False
        try:
            assembler = ChunkAssembler()
            texts = await start(assembler)
            if texts is None:
                return
            async with contextlib.aclosing(texts):  # the connection goes back at once
                async for text in texts:
                    if race.stopped():
                        break
                    streamed = True
                    yield ProviderDelta(text=text)
            if race.stopped():
                return
            yield ProviderDelta(
                done=True,
                tool_calls=assembler.tool_calls(),
                usage=assembler.usage,
                finish_reason=assembler.finish_reason,
            )
            return
        except Exception as error:
            kind = classify_provider_error(error)
            # A retry after text went out would repeat that text to the user.
            if kind == "provider_unavailable" and not streamed and attempt < retry.attempts:
                delay = _retry_delay(error, attempt, retry)
                if delay is not None:
                    finished, _ = await race.run(asyncio.sleep(delay))
                    if not finished:
                        return
                    continue
            raise ProviderError(kind, _error_message(error, model), attempts=attempt) from error
