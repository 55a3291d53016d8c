"""Tokens and cost per model call and per turn, priced locally; budgets before each call."""

from __future__ import annotations

import pytest

from openprogram.agent.events import ModelCallFinished, TurnError, TurnFinished, TurnRequest
from openprogram.providers.pricing import (
    ModelPrice,
    call_cost,
    parse_price_overrides,
    set_price_overrides,
)
from tests.component.agent import tools_for_tests as tools
from tests.component.agent.conftest import FAKE_MODEL, of_type, run_turn
from tests.fakes.openai_server import text_reply, tool_calls_reply


def _usage(prompt: int, completion: int, cached: int = 0) -> dict:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


@pytest.fixture
def prices():
    set_price_overrides({FAKE_MODEL: ModelPrice(input=2.5, output=10.0, cached_input=1.25)})
    yield
    set_price_overrides({})


async def test_each_model_call_reports_the_providers_tokens_and_its_price(
    fake_openai, empty_registry, prices
):
    tools.register_echo()
    first = tool_calls_reply(("echo", {"text": "hi"}))
    first.usage = _usage(120_000, 4_000, cached=20_000)
    last = text_reply("done")
    last.usage = _usage(130_000, 2_000)
    fake_openai.script(first, last)

    events = await run_turn(TurnRequest(text="say hi", model=FAKE_MODEL))

    calls = of_type(events, ModelCallFinished)
    assert [(c.step, c.prompt_tokens, c.completion_tokens, c.cached_tokens) for c in calls] == [
        (1, 120_000, 4_000, 20_000),
        (2, 130_000, 2_000, 0),
    ]
    assert not any(c.estimated for c in calls)
    # 100k * 2.50 + 20k * 1.25 + 4k * 10 per million = 0.25 + 0.025 + 0.04
    assert calls[0].cost_usd == pytest.approx(0.315)
    assert calls[1].cost_usd == pytest.approx(0.345)
    end = events[-1]
    assert isinstance(end, TurnFinished)
    assert round(end.cost_usd, 2) == 0.66
    assert end.price_known
    assert end.usage["prompt_tokens"] == 250_000
    assert end.usage["cached_tokens"] == 20_000


async def test_a_model_in_litellms_cost_map_is_priced_from_it(fake_openai, empty_registry):
    reply = text_reply("hello")
    reply.usage = _usage(2_000_000, 1_000_000, cached=1_000_000)
    fake_openai.script(reply)

    events = await run_turn(TurnRequest(text="hi", model="openai/gpt-4o-mini"))

    (call,) = of_type(events, ModelCallFinished)
    # litellm's map: 0.15 input, 0.075 cached input, 0.60 output (USD per million tokens)
    assert call.price_known
    assert round(call.cost_usd, 4) == round(0.15 + 0.075 + 0.60, 4)


async def test_a_model_without_a_price_costs_nothing_and_says_so(fake_openai, empty_registry):
    fake_openai.script(text_reply("hello"))

    events = await run_turn(TurnRequest(text="hi", model=FAKE_MODEL))

    (call,) = of_type(events, ModelCallFinished)
    assert (call.cost_usd, call.price_known) == (0.0, False)
    assert events[-1].stop_reason == "completed"
    assert events[-1].price_known is False


async def test_the_offline_model_is_free():
    events = await run_turn(TurnRequest(text="hello", model="offline"))
    calls = of_type(events, ModelCallFinished)
    assert calls and all(c.price_known and c.cost_usd == 0 for c in calls)
    assert calls[0].prompt_tokens > 0


async def test_a_turn_over_budget_is_refused_before_any_model_call(fake_openai, empty_registry):
    seen: list[float] = []

    async def spent(turn_cost: float) -> str | None:
        seen.append(turn_cost)
        return "Your monthly budget is spent."

    events = await run_turn(TurnRequest(text="hi", model=FAKE_MODEL, budget_check=spent))

    assert fake_openai.requests == []
    assert seen == [0.0]
    (error,) = of_type(events, TurnError)
    assert (error.kind, error.message) == ("budget", "Your monthly budget is spent.")
    assert events[-1].stop_reason == "budget"


async def test_crossing_the_budget_finishes_the_step_then_stops(
    fake_openai, empty_registry, prices
):
    tools.register_echo()
    first = tool_calls_reply(("echo", {"text": "hi"}))
    first.usage = _usage(400_000, 0)  # 1.00 USD
    fake_openai.script(first, text_reply("never asked"))

    async def one_dollar(turn_cost: float) -> str | None:
        return "Stopped: budget reached." if turn_cost >= 1.0 else None

    events = await run_turn(TurnRequest(text="hi", model=FAKE_MODEL, budget_check=one_dollar))

    assert len(fake_openai.requests) == 1
    finished = [e for e in events if e.type == "tool_finished"]
    assert [f.preview for f in finished] == ["echo: hi"]
    assert events[-1].stop_reason == "budget"
    assert events[-1].cost_usd == pytest.approx(1.0)


def test_price_overrides_are_parsed_strictly():
    prices = parse_price_overrides(
        {"local/llama": 0, "vllm/qwen": {"input": 0.2, "output": 0.6, "cached_input": 0.1}}
    )
    assert prices["local/llama"] == ModelPrice(0.0, 0.0)
    assert prices["vllm/qwen"].cached_input == 0.1
    for bad, message in [
        ([], "JSON object"),
        ({"m": "cheap"}, "number or an object"),
        ({"m": {"input": 1}}, "both 'input' and 'output'"),
        ({"m": {"input": -1, "output": 1}}, "≥ 0"),
        ({"m": {"input": 1, "output": 1, "per_call": 3}}, "unknown field"),
    ]:
        with pytest.raises(ValueError, match=message):
            parse_price_overrides(bad)


def test_cached_tokens_never_exceed_the_prompt():
    set_price_overrides({"m": ModelPrice(1.0, 1.0, cached_input=0.0)})
    try:
        cost = call_cost("m", {"prompt_tokens": 10, "cached_tokens": 50, "completion_tokens": 0})
    finally:
        set_price_overrides({})
    assert cost.usd == 0.0


async def test_a_provider_without_usage_gets_its_tokens_counted(empty_registry):
    from openprogram.agent.dispatcher import process_user_turn
    from openprogram.agent.types import ToolCall
    from openprogram.providers.streaming import ProviderDelta

    tools.register_echo()
    replies = iter(
        [
            [ProviderDelta(done=True, tool_calls=[ToolCall("c1", "echo", '{"text": "hi"}')])],
            [ProviderDelta(text="All done here."), ProviderDelta(done=True)],
        ]
    )

    async def no_usage_model(**_):
        for delta in next(replies):
            yield delta

    request = TurnRequest(text="count me " * 50, model="custom/no-usage")
    events = [event async for event in process_user_turn(request, provider=no_usage_model)]

    calls = of_type(events, ModelCallFinished)
    assert [c.estimated for c in calls] == [True, True]
    assert calls[0].prompt_tokens >= 100  # the user text alone is 100 words
    assert calls[1].prompt_tokens > calls[0].prompt_tokens  # the tool exchange was added
    assert calls[1].completion_tokens >= 3
