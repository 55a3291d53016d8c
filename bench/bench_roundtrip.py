"""Framework overhead per tool-call round trip, side by side with peers (issue #11, item 1).

One round trip: resolve the tools, build the request (wire messages + tool schemas),
parse the model's tool call, validate the arguments, execute a no-op tool, record the
result, ask again, get the answer. The model is a scripted stand-in answering
instantly in every framework, so only framework work is timed:

- OpenProgram: ``process_user_turn`` with a ``provider`` that serialises the request
  exactly as the litellm path does (``messages_to_wire`` + ``AgentTool.to_wire``) and
  answers from a script; all events are consumed.
- pydantic-ai: ``Agent`` with ``FunctionModel``.
- OpenAI Agents SDK: ``Runner.run`` with a scripted ``Model``.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from bench._util import print_table

__all__ = ["main"]

ROUNDS = 9
CALLS_PER_ROUND = 200


def _openprogram_runner() -> Callable[[], Awaitable[str]]:
    from openprogram.agent.dispatcher import process_user_turn
    from openprogram.agent.events import TurnFinished, TurnRequest
    from openprogram.agent.types import ToolCall
    from openprogram.programs.decorator import function
    from openprogram.providers.streaming import ProviderDelta, messages_to_wire

    @function(name="noop", register_globally=True, override=True)
    def noop(value: str) -> str:
        """Return the value."""
        return value

    async def scripted(
        *, model, messages, tools, cancel=None, retry=None, **_
    ) -> AsyncIterator[ProviderDelta]:
        wire = messages_to_wire(messages)
        [tool.to_wire() for tool in tools]
        # Usage as a real provider reports it; without it the loop counts tokens itself
        # with tiktoken (about 0.2 ms per call here; docs/usage.md).
        usage = {"prompt_tokens": 40 * len(wire), "completion_tokens": 8}
        if wire[-1]["role"] == "tool":
            yield ProviderDelta(text="done")
            yield ProviderDelta(done=True, finish_reason="stop", usage=usage)
        else:
            call = ToolCall(id="call_1", name="noop", arguments='{"value": "x"}')
            yield ProviderDelta(
                done=True, tool_calls=[call], finish_reason="tool_calls", usage=usage
            )

    async def run_once() -> str:
        request = TurnRequest(text="go", model="offline", allow=["noop"])
        text = ""
        async for event in process_user_turn(request, provider=scripted):
            if isinstance(event, TurnFinished):
                text = event.text
        return text

    return run_once


def _measure(runners: dict[str, Callable[[], Awaitable[str]]]) -> dict[str, list[float]]:
    """ms per round trip, ROUNDS samples each; frameworks alternate round by round so
    machine load falls on all of them alike."""

    async def measure() -> dict[str, list[float]]:
        samples: dict[str, list[float]] = {name: [] for name in runners}
        for run_once in runners.values():
            assert await run_once() == "done"
            for _ in range(20):
                await run_once()
        for _ in range(ROUNDS):
            for name, run_once in runners.items():
                start = time.perf_counter()
                for _ in range(CALLS_PER_ROUND):
                    await run_once()
                samples[name].append((time.perf_counter() - start) / CALLS_PER_ROUND * 1000)
        return samples

    return asyncio.run(measure())


def main() -> None:
    from bench._peers import openai_agents_runner, pydantic_ai_runner
    from openprogram.programs.registry import restore_registry, snapshot_registry

    snapshot = snapshot_registry()
    try:
        runners = {
            "OpenProgram": _openprogram_runner(),
            "pydantic-ai (FunctionModel)": pydantic_ai_runner(),
            "OpenAI Agents SDK (scripted Model)": openai_agents_runner(),
        }
        samples = _measure(runners)
        results = {name: (statistics.median(v), min(v)) for name, v in samples.items()}
    finally:
        restore_registry(snapshot)
    fastest_peer = min(v[0] for k, v in results.items() if k != "OpenProgram")
    rows = [
        [name, f"{median:.3f}", f"{best:.3f}", f"{median / fastest_peer:.2f}×"]
        for name, (median, best) in results.items()
    ]
    print_table(
        "Tool-call round trip, scripted model answering instantly (ms per round trip)",
        ["framework", "median ms", "best ms", "vs fastest peer"],
        rows,
    )


if __name__ == "__main__":
    main()
