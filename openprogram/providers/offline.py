"""The offline model: the scripted reply streamed as :class:`ProviderDelta` items, in process.

``make run`` works out of the box because the default model needs nothing. It used
to be a litellm custom provider; but litellm's per-call work (a worker-thread hop
for the custom handler, rebuilding the whole response for cost logging, success
handlers) cost more CPU than everything else in an offline turn, for a reply that
needs none of it. So :func:`~openprogram.providers.streaming.stream_chat` streams it
directly, with the same wire shapes a real model gets (Chat Completions messages
and ``tools=[...]``), the same chunking, tool calls and usage: the agent loop still
cannot tell it from a real model. The script itself lives in
:mod:`openprogram.providers.offline_script`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from openprogram.agent.types import ToolCall
from openprogram.providers.offline_script import offline_reply

__all__ = ["CHUNK_CHARS", "offline_stream"]

CHUNK_CHARS = 12
"""The offline model streams its text in pieces of this many characters."""


async def offline_stream(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    cancel: asyncio.Event | None = None,
) -> AsyncIterator[Any]:
    """The offline model's reply to a wire request; ends with ``done=True`` unless cancelled."""
    from openprogram.providers.streaming import ProviderDelta

    reply = offline_reply(messages, tools)
    for start in range(0, len(reply.text), CHUNK_CHARS):
        if cancel is not None and cancel.is_set():
            return
        yield ProviderDelta(text=reply.text[start : start + CHUNK_CHARS])
        await asyncio.sleep(0)  # a stream: the pieces arrive one by one, as from a server
    if cancel is not None and cancel.is_set():
        return
    prompt_tokens = sum(len(str(m.get("content") or "")) for m in messages) // 4
    completion_tokens = max(1, len(reply.text) // 4) + len(reply.tool_calls)
    yield ProviderDelta(
        done=True,
        tool_calls=[
            ToolCall(id=call["id"], name=call["name"], arguments=call["arguments"])
            for call in reply.tool_calls
        ],
        usage={
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "cached_tokens": 0,
        },
        finish_reason="tool_calls" if reply.tool_calls else "stop",
    )
