"""A model that streams like a real one: the fake OpenAI server, paced, in its own process.

``python -m bench._paced_model TOKENS_PER_SECOND TOKENS_PER_CALL`` prints ``URL=<base
url>`` and serves until its stdin closes. Every chat turn gets two calls: the first
streams ``TOKENS_PER_CALL`` stamped text pieces and asks for ``todo_read`` and
``list_dir``; the second (after the tool results) streams as many and stops. Its own
process, so its 100 paced streams do not share a GIL with the clients that time them.
"""

from __future__ import annotations

import sys
from typing import Any

from tests.fakes.openai_server import FakeOpenAIServer, FakeReply, tool_calls_reply

__all__ = ["MODEL", "TOOLS_PER_TURN"]

MODEL = "openai/paced"
TOOLS_PER_TURN = 2


def _responder(rate: float, tokens: int) -> Any:
    def reply(body: dict[str, Any]) -> FakeReply:
        messages = body.get("messages") or [{}]
        if messages[-1].get("role") == "tool":
            answer = FakeReply()
        else:
            answer = tool_calls_reply(("todo_read", {}), ("list_dir", {}))
        answer.tokens_per_second, answer.stamped_tokens = rate, tokens
        return answer

    return reply


def main() -> None:
    rate, tokens = float(sys.argv[1]), int(sys.argv[2])
    with FakeOpenAIServer() as server:
        server.respond_with(_responder(rate, tokens))
        print(f"URL={server.base_url}", flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
