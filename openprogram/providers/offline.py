"""The offline model behind a litellm custom provider: no key, no network, same path.

``make run`` works out of the box because the default model needs nothing; and
because it is served through litellm (provider ``openprogram``, model
``openprogram/offline``) the agent loop cannot tell it from a real model. The
script itself lives in :mod:`openprogram.providers.offline_script`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from litellm import CustomLLM
from litellm.types.utils import GenericStreamingChunk

from openprogram.providers.offline_script import offline_reply

__all__ = ["OfflineModel"]

_CHUNK_CHARS = 12


def _chunk(
    text: str = "", tool_use: dict[str, Any] | None = None, *, index: int = 0
) -> GenericStreamingChunk:
    return {
        "text": text,
        "tool_use": tool_use,
        "is_finished": False,
        "finish_reason": "",
        "usage": None,
        "index": index,
    }


class OfflineModel(CustomLLM):
    """litellm custom provider ``openprogram``; model ``openprogram/offline``."""

    async def astreaming(self, *args: Any, **kwargs: Any) -> AsyncIterator[GenericStreamingChunk]:
        messages: list[dict[str, Any]] = kwargs.get("messages") or []
        tools: list[dict[str, Any]] = (kwargs.get("optional_params") or {}).get("tools") or []
        reply = offline_reply(messages, tools)
        for start in range(0, len(reply.text), _CHUNK_CHARS):
            yield _chunk(reply.text[start : start + _CHUNK_CHARS])
        for index, call in enumerate(reply.tool_calls):
            function = {"name": call["name"], "arguments": call["arguments"]}
            yield _chunk(
                tool_use={
                    "id": call["id"],
                    "type": "function",
                    "function": function,
                    "index": index,
                }
            )
        prompt_tokens = sum(len(str(m.get("content") or "")) for m in messages) // 4
        completion_tokens = max(1, len(reply.text) // 4) + len(reply.tool_calls)
        yield {
            "text": "",
            "tool_use": None,
            "is_finished": True,
            "finish_reason": "tool_calls" if reply.tool_calls else "stop",
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
            "index": 0,
        }
