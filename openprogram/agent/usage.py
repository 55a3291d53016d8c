"""Token counts of one model call: the provider's own, or counted when it gave none."""

from __future__ import annotations

import json
from collections.abc import Sequence

from openprogram.agent.types import AgentTool, Message
from openprogram.programs.tokens import count_tokens, tools_prompt_tokens
from openprogram.providers.streaming import ProviderDelta, messages_to_wire

__all__ = ["measured_usage"]


def measured_usage(
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
    prompt = count_tokens(json.dumps(messages_to_wire(messages), ensure_ascii=False))
    prompt += tools_prompt_tokens(tools)
    calls = "".join(f"{call.name}{call.arguments}" for call in final.tool_calls)
    completion = count_tokens(reply_text + calls)
    return _counts(prompt, completion, 0), True


def _counts(prompt: int, completion: int, cached: int) -> dict[str, int]:
    prompt, completion = int(prompt or 0), int(completion or 0)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "cached_tokens": int(cached or 0),
        "total_tokens": prompt + completion,
    }
