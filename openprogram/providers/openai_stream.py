"""Reading a model's chat stream: OpenAI Chat Completions streams parsed here, others by litellm.

A call OpenProgram sends itself (:mod:`openprogram.providers.openai_http`) is read here:
SSE events, JSON chunks, text and tool-call fragments, the finish reason and the usage
chunk (``stream_options.include_usage``) — litellm's stream wrapper builds pydantic
models for every chunk, and that per-chunk work cost more server CPU than everything
else a streamed piece does. A call litellm sends is read end to end through litellm's
wrapper (:func:`litellm_stream_texts`). Both feed one :class:`ChunkAssembler`.

A stream that breaks after it started (a provider error object, a chunk that is not
JSON, a dropped connection or read timeout, the end of the stream before a finish
reason, a finish reason of ``error`` or ``abort``) raises :class:`StreamBroken`, a
transient failure, as litellm's wrapper did: retried only while no text went out.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Sequence
from json.scanner import make_scanner
from typing import Any

from openprogram.agent.types import ToolCall

__all__ = [
    "ChunkAssembler",
    "SSEEvents",
    "StreamBroken",
    "check_finish",
    "litellm_stream_texts",
    "parse_chunk",
    "read_events",
]

_BROKEN_FINISH = ("error", "abort")
_decoder = json.JSONDecoder()
_decode = _decoder.decode
_scan = make_scanner(_decoder)
"""The C scanner under ``json.loads``, without its two Python layers (whitespace and
trailing-data checks): a chunk that is not one bare JSON value goes to ``_decode``,
which accepts surrounding whitespace or says what is wrong."""
_QUOTED_CHARS = 200


class StreamBroken(ConnectionError):
    """The provider's stream failed after it started (transient, as a dropped connection)."""


def _get(obj: Any, key: str) -> Any:
    """A field of a chunk part: a dict (parsed here) or an object (litellm's chunks)."""
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def _usage_counts(usage: Any) -> dict[str, int]:
    """Token counts of a usage object; cached prompt tokens when reported."""
    counts = {
        key: int(_get(usage, key) or 0)
        for key in ("prompt_tokens", "completion_tokens", "total_tokens")
    }
    details = _get(usage, "prompt_tokens_details")
    cached = (details is not None and _get(details, "cached_tokens")) or _get(
        usage, "cache_read_input_tokens"
    )
    counts["cached_tokens"] = int(cached or 0)
    return counts


class ChunkAssembler:
    """What a stream of chat chunks adds up to: tool calls joined from fragments spread
    over many chunks (keyed by index), the last usage reported, the finish reason."""

    def __init__(self) -> None:
        self._calls: dict[int, dict[str, Any]] = {}
        self.usage: dict[str, int] = {}
        self.finish_reason: str | None = None

    def text(self, chunk: Any) -> str:
        """Add one chunk; return the text it carries."""
        if type(chunk) is dict:
            return self.dict_text(chunk)
        usage = _get(chunk, "usage")
        if usage:
            self.usage = _usage_counts(usage)
        text = ""
        for choice in _get(chunk, "choices") or ():
            self.finish_reason = _get(choice, "finish_reason") or self.finish_reason
            delta = _get(choice, "delta")
            if delta is None:
                continue
            fragments = _get(delta, "tool_calls")
            if fragments:
                self._add_calls(fragments)
            content = _get(delta, "content")
            if content:
                text += content
        return text

    def dict_text(self, chunk: dict[str, Any]) -> str:
        """:meth:`text` for a parsed chunk (plain dicts: no per-field type checks)."""
        usage = chunk.get("usage")
        if usage:
            self.usage = _usage_counts(usage)
        text = ""
        for choice in chunk.get("choices") or ():
            if type(choice) is not dict:
                continue
            self.finish_reason = choice.get("finish_reason") or self.finish_reason
            delta = choice.get("delta")
            if type(delta) is not dict:
                continue
            fragments = delta.get("tool_calls")
            if fragments:
                self._add_calls(fragments)
            content = delta.get("content")
            if content:
                text += content
        return text

    def _add_calls(self, fragments: Sequence[Any]) -> None:
        for position, fragment in enumerate(fragments):
            index = _get(fragment, "index")
            index = position if index is None else index
            call = self._calls.setdefault(index, {"id": "", "name": "", "arguments": []})
            if _get(fragment, "id"):
                call["id"] = _get(fragment, "id")
            function = _get(fragment, "function")
            if function is not None:
                if _get(function, "name"):
                    call["name"] = _get(function, "name")
                if _get(function, "arguments"):
                    call["arguments"].append(_get(function, "arguments"))

    def tool_calls(self) -> list[ToolCall]:
        return [
            ToolCall(
                id=call["id"] or f"call_{uuid.uuid4().hex[:12]}",
                name=call["name"],
                arguments="".join(call["arguments"]) or "{}",
            )
            for _, call in sorted(self._calls.items())
        ]


class SSEEvents:
    """Server-sent events from network reads: the ``data`` of each complete event."""

    def __init__(self) -> None:
        self._tail = b""
        self._data: list[bytes] = []

    def feed(self, read: bytes) -> list[bytes]:
        if self._tail or self._data or not read.endswith(b"\n\n") or b"\r" in read:
            return self._feed_lines(read)
        if read.find(b"\n") == len(read) - 2 and read.startswith(b"data: "):
            return [read[6:-2]]  # the commonest read of all: one whole one-line event
        # The usual read: whole ``data: {...}`` events, one line each (no per-line loop).
        events = []
        for block in read[:-2].split(b"\n\n"):
            if block.startswith(b"data: ") and b"\n" not in block:
                events.append(block[6:])
            else:
                events.extend(self._feed_lines(block + b"\n\n"))
        return events

    def _feed_lines(self, read: bytes) -> list[bytes]:
        lines = (self._tail + read).split(b"\n")
        self._tail = lines.pop()
        events = []
        for line in lines:
            if line.endswith(b"\r"):
                line = line[:-1]
            if not line:
                if self._data:
                    events.append(b"\n".join(self._data))
                    self._data = []
            elif line.startswith(b"data:"):
                value = line[5:]
                self._data.append(value[1:] if value.startswith(b" ") else value)
            # Comments (": keep-alive") and event/id/retry fields carry nothing for chat.
        return events


def parse_chunk(data: bytes) -> dict[str, Any]:
    try:
        text = data.decode()
        try:
            chunk, end = _scan(text, 0)
        except StopIteration:
            end = -1
        if end != len(text):
            chunk = _decode(text)  # json.loads minus its encoding sniffing
    except ValueError as exc:  # UnicodeDecodeError included
        raise StreamBroken(f"a stream chunk is not JSON ({exc}): {data[:_QUOTED_CHARS]!r}") from exc
    if not isinstance(chunk, dict):
        raise StreamBroken(f"a stream chunk is not a JSON object: {data[:_QUOTED_CHARS]!r}")
    error = chunk.get("error")
    if error:
        message = _get(error, "message") if isinstance(error, dict) else None
        raise StreamBroken(str(message or error))
    return chunk


def check_finish(assembler: ChunkAssembler) -> None:
    if assembler.finish_reason in _BROKEN_FINISH:
        raise StreamBroken(f"the model stopped with finish reason {assembler.finish_reason!r}")


def read_events(
    events: SSEEvents, read: bytes, assembler: ChunkAssembler
) -> tuple[str, StreamBroken | None, bool]:
    """One network read of an OpenAI chat stream: the text of the chunks it completed
    (joined), the error a chunk reported (the text before it still goes out first), and
    whether ``[DONE]`` came. The own client reads its streams through this."""
    texts: list[str] = []
    for data in events.feed(read):
        if data.startswith(b"[DONE]"):
            return "".join(texts), None, True
        try:
            texts.append(assembler.dict_text(parse_chunk(data)))
        except StreamBroken as exc:
            return "".join(texts), exc, False
    return "".join(texts), None, False


async def litellm_stream_texts(response: Any, assembler: ChunkAssembler) -> AsyncIterator[str]:
    """The text of any other provider's stream, read through litellm's wrapper."""
    try:
        async for chunk in response:
            text = assembler.text(chunk)
            if text:
                yield text
    finally:
        close = getattr(response, "aclose", None)
        if close is not None:
            await close()
