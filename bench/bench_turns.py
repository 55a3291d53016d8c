"""Framework overhead per tool-call round trip, with the model call subtracted.

A turn with one tool call makes two model calls (ask → tool call, results →
answer). We time that whole turn, and the same two request bodies sent straight
to the model (streamed: ``litellm.acompletion``, or the offline model's own stream);
overhead = turn - bare pair.
It covers resolution, the deferred split, schema serialisation, argument
validation, tool execution through FunctionTool, and event streaming. Models:
the offline model (in process, not through litellm) and the fake
OpenAI-compatible HTTP server on 127.0.0.1 (real sockets, SSE parsing).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bench._util import print_table

__all__ = ["main"]

_ROUNDS = 30
_WARMUP = 3
_TOOL = "bench_echo"


def _fake_responder(body: dict[str, Any]) -> Any:
    from tests.fakes.openai_server import text_reply, tool_calls_reply

    if body["messages"][-1]["role"] == "tool":
        return text_reply("done")
    return tool_calls_reply((_TOOL, {"text": "hi"}))


async def _bare_calls(model: str, bodies: list[dict[str, Any]]) -> None:
    """The turn's own two requests, sent straight to the model (no framework around them)."""
    from openprogram.providers._litellm_setup import load_litellm
    from openprogram.providers.offline import offline_stream
    from openprogram.providers.routing import connection_kwargs, is_offline, litellm_model_name

    if is_offline(model):
        for body in bodies:
            async for _ in offline_stream(body["messages"], body["tools"]):
                pass
        return
    litellm = load_litellm()
    for body in bodies:
        response = await litellm.acompletion(
            model=litellm_model_name(model),
            messages=body["messages"],
            tools=body["tools"],
            stream=True,
            stream_options={"include_usage": True},
            max_retries=0,
            **connection_kwargs(model),
        )
        async for _ in response:
            pass


async def _turn(model: str) -> None:
    from openprogram.agent.dispatcher import process_user_turn
    from openprogram.agent.events import TurnFinished, TurnRequest

    request = TurnRequest(text=f"/{_TOOL} text=hi", model=model, profile_tools=[_TOOL])
    async for event in process_user_turn(request):
        if isinstance(event, TurnFinished) and event.stop_reason != "completed":
            raise RuntimeError(f"bench turn ended with {event.stop_reason!r}")


async def _timed_ms(run: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    await run()
    return (time.perf_counter() - started) * 1000


async def _compare(model: str, bodies: list[dict[str, Any]]) -> tuple[float, float]:
    """Median bare-pair and turn times, interleaved so machine load hits both alike."""
    bare: list[float] = []
    turn: list[float] = []
    for round_number in range(_WARMUP + _ROUNDS):
        bare_ms = await _timed_ms(lambda: _bare_calls(model, bodies))
        turn_ms = await _timed_ms(lambda: _turn(model))
        if round_number >= _WARMUP:
            bare.append(bare_ms)
            turn.append(turn_ms)
    return statistics.median(bare), statistics.median(turn)


async def _measure() -> list[list[object]]:
    from tests.fakes.openai_server import FakeOpenAIServer

    rows: list[list[object]] = []
    with FakeOpenAIServer() as server:
        server.respond_with(_fake_responder)
        fake_env = {"OPENPROGRAM_API_BASE": server.base_url, "OPENPROGRAM_API_KEY": "test"}
        os.environ.update(fake_env)
        try:
            await _turn("openai/fake-model")
            bodies = list(server.requests)
            targets = [
                ("offline (in process)", "offline"),
                ("fake HTTP server (openai/ via litellm)", "openai/fake-model"),
            ]
            for label, model in targets:
                bare, turn = await _compare(model, bodies)
                rows.append([label, f"{bare:.2f}", f"{turn:.2f}", f"{turn - bare:.2f}"])
        finally:
            for key in fake_env:
                os.environ.pop(key, None)
    return rows


def main() -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from openprogram.programs import registry
    from openprogram.programs.decorator import function

    snapshot = registry.snapshot_registry()
    try:

        @function(name=_TOOL)
        def bench_echo(text: str) -> str:
            """Return the text."""
            return text

        rows = asyncio.run(_measure())
    finally:
        registry.restore_registry(snapshot)
    print_table(
        f"Turn overhead per tool-call round trip (median of {_ROUNDS}, ms)",
        [
            "model",
            "bare model, same 2 calls",
            "turn with 1 tool call",
            "framework overhead",
        ],
        rows,
    )
