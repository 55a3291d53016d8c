"""The litellm adapter on its own: streaming, assembly, errors, context windows, routing."""

from __future__ import annotations

import asyncio

import pytest

from openprogram.agent.types import AgentTool, Message
from openprogram.providers import (
    FALLBACK_CONTEXT_TOKENS,
    ProviderError,
    RetryPolicy,
    classify_provider_error,
    connection_kwargs,
    context_window_chars,
    context_window_tokens,
    litellm_model_name,
    stream_chat,
)
from openprogram.providers.context_window import context_window_chars_known
from tests.component.agent.conftest import FAKE_MODEL, FAST_RETRY
from tests.fakes.openai_server import (
    FakeReply,
    error_reply,
    text_reply,
    tool_calls_reply,
)


async def _collect(**kwargs):
    return [delta async for delta in stream_chat(retry=FAST_RETRY, **kwargs)]


async def test_text_reaches_the_caller_while_the_model_is_still_streaming(fake_openai):
    fake_openai.script(FakeReply(text="Hello from the fake server", hang=True))
    stream = stream_chat(
        model=FAKE_MODEL, messages=[Message(role="user", content="hi")], retry=FAST_RETRY
    )

    # The server holds the stream open (30 s) until released: text must come before that.
    first = await asyncio.wait_for(anext(stream), timeout=20)
    fake_openai.release()
    deltas = [first, *[delta async for delta in stream]]

    assert first.text and not first.done
    assert "".join(d.text for d in deltas) == "Hello from the fake server"
    assert deltas[-1].done and deltas[-1].finish_reason == "stop"
    assert deltas[-1].usage["completion_tokens"] > 0


async def test_it_assembles_tool_call_arguments_split_across_chunks(fake_openai):
    tool = AgentTool(
        name="lookup",
        description="Look something up.",
        parameters={"type": "object", "properties": {"term": {"type": "string"}}},
    )
    fake_openai.script(
        tool_calls_reply(
            ("lookup", {"term": "a fairly long search term"}), ("lookup", {"term": "b"})
        )
    )

    deltas = await _collect(
        model=FAKE_MODEL, messages=[Message(role="user", content="x")], tools=[tool]
    )

    calls = deltas[-1].tool_calls
    assert [(c.name, c.arguments) for c in calls] == [
        ("lookup", '{"term": "a fairly long search term"}'),
        ("lookup", '{"term": "b"}'),
    ]
    assert all(c.id.startswith("call_") for c in calls)
    assert fake_openai.requests[0]["tools"] == [tool.to_wire()]
    assert fake_openai.requests[0]["stream"] is True


@pytest.mark.parametrize("status", [400, 404])
async def test_a_bad_request_is_raised_at_once_with_the_providers_message(fake_openai, status):
    fake_openai.script(error_reply(status, "messages: field required"))

    with pytest.raises(ProviderError) as caught:
        await _collect(model=FAKE_MODEL, messages=[Message(role="user", content="x")])

    assert caught.value.kind == "provider_bad_request"
    assert "messages: field required" in caught.value.message
    assert caught.value.attempts == 1
    assert len(fake_openai.requests) == 1


async def test_a_set_cancel_event_ends_the_stream_quietly(fake_openai):
    cancel = asyncio.Event()
    cancel.set()
    fake_openai.script(text_reply("never read"))

    deltas = await _collect(
        model=FAKE_MODEL, messages=[Message(role="user", content="x")], cancel=cancel
    )

    assert deltas == []


def test_known_models_get_their_context_window_and_unknown_ones_the_fallback():
    assert context_window_tokens("gpt-4o") == 128_000
    assert context_window_tokens("openai/some-local-model") == FALLBACK_CONTEXT_TOKENS
    assert context_window_tokens("offline") == FALLBACK_CONTEXT_TOKENS
    assert context_window_chars("offline") == FALLBACK_CONTEXT_TOKENS * 4


def test_a_context_window_is_known_without_a_look_up_once_it_was_worked_out():
    model = "openai/a-model-asked-about-once"
    assert context_window_chars_known(model) is None
    assert context_window_chars(model) == FALLBACK_CONTEXT_TOKENS * 4
    assert context_window_chars_known(model) == FALLBACK_CONTEXT_TOKENS * 4


def test_offline_routes_to_the_custom_provider_and_other_names_pass_through(monkeypatch):
    monkeypatch.delenv("OPENPROGRAM_API_BASE", raising=False)
    monkeypatch.delenv("OPENPROGRAM_API_KEY", raising=False)
    assert litellm_model_name("offline") == "openprogram/offline"
    assert litellm_model_name("anthropic/claude-3-5-haiku") == "anthropic/claude-3-5-haiku"
    assert connection_kwargs("openai/gpt-4o") == {}
    monkeypatch.setenv("OPENPROGRAM_API_BASE", "http://127.0.0.1:8000/v1")
    assert connection_kwargs("openai/gpt-4o") == {"api_base": "http://127.0.0.1:8000/v1"}
    assert connection_kwargs("offline") == {}
    with pytest.raises(ValueError, match="a model name is required"):
        litellm_model_name("  ")


def test_errors_are_classified_by_their_litellm_class():
    import litellm

    auth = litellm.AuthenticationError(message="bad key", llm_provider="openai", model="m")
    window = litellm.ContextWindowExceededError(
        message="too long", model="m", llm_provider="openai"
    )
    limited = litellm.RateLimitError(message="slow", llm_provider="openai", model="m")
    assert classify_provider_error(auth) == "provider_auth"
    assert classify_provider_error(window) == "provider_bad_request"
    assert classify_provider_error(limited) == "provider_unavailable"
    assert classify_provider_error(ConnectionRefusedError()) == "provider_unavailable"
    assert classify_provider_error(KeyError("x")) == "provider_error"


def test_backoff_doubles_up_to_its_ceiling_and_bad_env_values_are_refused(monkeypatch):
    policy = RetryPolicy(attempts=5, base_delay=0.5, max_delay=1.5)
    assert [policy.delay_before(n) for n in (2, 3, 4, 5)] == [0.5, 1.0, 1.5, 1.5]
    monkeypatch.setenv("OPENPROGRAM_PROVIDER_RETRIES", "0")
    with pytest.raises(ValueError, match="OPENPROGRAM_PROVIDER_RETRIES"):
        RetryPolicy.from_env()
