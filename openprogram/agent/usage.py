"""Token counts of one model call: the provider's own, or counted when it gave none."""

from __future__ import annotations

import json
from collections.abc import Sequence

from openprogram.agent.types import AgentTool, Message
from openprogram.programs.tokens import count_tokens, tools_prompt_tokens
from openprogram.providers.streaming import ProviderDelta, messages_to_wire

__all__ = ["UsageMeter"]


class UsageMeter:
    """Measures a turn's calls; counting is incremental, since a turn's messages only grow."""

    def __init__(self) -> None:
        self._messages_counted = 0
        self._message_tokens = 0
        self._tool_tokens: dict[tuple[str, ...], int] = {}

    def measure(
        self,
        final: ProviderDelta,
        messages: Sequence[Message],
        tools: Sequence[AgentTool],
        reply_text: str,
    ) -> tuple[dict[str, int], bool]:
        """``(usage, estimated)``: the provider's usage, else a tiktoken count of the call."""
        given = final.usage
        if given.get("prompt_tokens") or given.get("completion_tokens"):
            return _counts(
                given.get("prompt_tokens", 0),
                given.get("completion_tokens", 0),
                given.get("cached_tokens", 0),
            ), False
        calls = "".join(f"{call.name}{call.arguments}" for call in final.tool_calls)
        completion = count_tokens(reply_text + calls)
        return _counts(self._prompt_tokens(messages, tools), completion, 0), True

    def _prompt_tokens(self, messages: Sequence[Message], tools: Sequence[AgentTool]) -> int:
        if len(messages) < self._messages_counted:  # not the same growing list: start over
            self._messages_counted, self._message_tokens = 0, 0
        fresh = messages[self._messages_counted :]
        if fresh:
            wire = json.dumps(messages_to_wire(fresh), ensure_ascii=False)
            self._message_tokens += count_tokens(wire)
            self._messages_counted = len(messages)
        key = tuple(tool.name for tool in tools)
        if key not in self._tool_tokens:
            self._tool_tokens[key] = tools_prompt_tokens(tools)
        return self._message_tokens + self._tool_tokens[key]


def _counts(prompt: int, completion: int, cached: int) -> dict[str, int]:
    prompt, completion = int(prompt or 0), int(completion or 0)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "cached_tokens": int(cached or 0),
        "total_tokens": prompt + completion,
    }
