"""Reading a model's stream against the real fake OpenAI server.

``openai/`` models (OpenAI-compatible servers) are sent and read by OpenProgram (or, with
``OPENPROGRAM_OPENAI_TRANSPORT=litellm``, by litellm end to end); other providers (here
``hosted_vllm/``, same wire) go through litellm and its stream wrapper.
All must give the same text, tool calls, finish reason and usage, and fail the same way.
test_provider_transports.py runs the full matrix over both transports.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from openprogram.agent.types import AgentTool, Message
from openprogram.providers import ProviderError, stream_chat
from tests.component.agent.conftest import FAKE_MODEL, FAST_RETRY
from tests.fakes.openai_server import FakeReply, text_reply, tool_calls_reply

WRAPPED_MODEL = "hosted_vllm/fake-model"
"""Same server, but litellm hands back a stream that is not the OpenAI SDK's: read through
litellm's wrapper."""

_PROVIDER_ERROR = json.dumps({"error": {"message": "upstream overloaded", "type": "server_error"}})
_LOOKUP = AgentTool(
    name="lookup",
    description="Look something up.",
    parameters={"type": "object", "properties": {"term": {"type": "string"}}},
)


async def _collect(model: str = FAKE_MODEL, **kwargs):
    deltas = []
    kwargs.setdefault("messages", [Message(role="user", content="hi")])
    try:
        async for delta in stream_chat(model=model, retry=FAST_RETRY, **kwargs):
            deltas.append(delta)
    except ProviderError as error:
        return deltas, error
    return deltas, None


@pytest.mark.parametrize("model", [FAKE_MODEL, WRAPPED_MODEL])
async def test_both_paths_give_the_same_text_tool_calls_finish_and_exact_usage(fake_openai, model):
    reply = tool_calls_reply(("lookup", {"term": "a fairly long search term"}), text="Let me see")
    reply.usage = {
        "prompt_tokens": 120,
        "completion_tokens": 17,
        "total_tokens": 137,
        "prompt_tokens_details": {"cached_tokens": 64},
    }
    fake_openai.script(reply)

    deltas, error = await _collect(model, tools=[_LOOKUP])

    assert error is None
    assert "".join(d.text for d in deltas) == "Let me see"
    final = deltas[-1]
    assert final.done and final.finish_reason == "tool_calls"
    assert [(c.name, c.arguments) for c in final.tool_calls] == [
        ("lookup", '{"term": "a fairly long search term"}')
    ]
    assert final.usage == {
        "prompt_tokens": 120,
        "completion_tokens": 17,
        "total_tokens": 137,
        "cached_tokens": 64,
    }
    assert fake_openai.requests[0]["stream_options"] == {"include_usage": True}


async def test_an_openai_stream_sent_by_litellm_is_read_through_litellm_end_to_end(
    fake_openai, monkeypatch
):
    from litellm.litellm_core_utils.streaming_handler import CustomStreamWrapper

    monkeypatch.setenv("OPENPROGRAM_OPENAI_TRANSPORT", "litellm")
    read_by_litellm = []
    real = CustomStreamWrapper.__anext__

    async def spy(self):
        chunk = await real(self)
        read_by_litellm.append(chunk)
        return chunk

    monkeypatch.setattr(CustomStreamWrapper, "__anext__", spy)
    fake_openai.script(text_reply("read by litellm"))

    deltas, error = await _collect()

    assert error is None
    assert "".join(d.text for d in deltas) == "read by litellm"
    assert deltas[-1].done and read_by_litellm


@pytest.mark.parametrize("model", [FAKE_MODEL, WRAPPED_MODEL])
async def test_a_provider_error_mid_stream_ends_the_call_after_the_text_that_came_first(
    fake_openai, model
):
    fake_openai.script(FakeReply(text="Hello there", broken_chunk=_PROVIDER_ERROR))

    deltas, error = await _collect(model)

    assert "".join(d.text for d in deltas) == "Hello there"
    assert not any(d.done for d in deltas)
    assert error is not None and error.kind == "provider_unavailable"
    assert "upstream overloaded" in error.message
    assert error.attempts == 1  # text went out: a retry would repeat it
    assert len(fake_openai.requests) == 1


@pytest.mark.parametrize("model", [FAKE_MODEL, WRAPPED_MODEL])
async def test_a_provider_error_before_any_text_is_retried(fake_openai, model):
    fake_openai.script(FakeReply(broken_chunk=_PROVIDER_ERROR), text_reply("second try"))

    deltas, error = await _collect(model)

    assert error is None
    assert "".join(d.text for d in deltas) == "second try"
    assert len(fake_openai.requests) == 2


async def test_a_chunk_that_is_not_json_fails_the_call_and_says_what_came(fake_openai):
    fake_openai.script(FakeReply(text="Hello there", broken_chunk='{"choices": [{"delta": '))

    deltas, error = await _collect()

    assert "".join(d.text for d in deltas) == "Hello there"
    assert error is not None and error.kind == "provider_unavailable"
    assert "not JSON" in error.message and '{"choices"' in error.message


async def test_a_stream_that_ends_before_a_finish_reason_fails_the_call(fake_openai):
    fake_openai.script(FakeReply(text="Hello there", cut_after_text=True))

    deltas, error = await _collect()

    assert "".join(d.text for d in deltas) == "Hello there"
    assert error is not None and error.kind == "provider_unavailable"
    assert "before a finish reason" in error.message


@pytest.mark.parametrize("model", [FAKE_MODEL, WRAPPED_MODEL])
async def test_stop_ends_a_stream_the_model_holds_open_at_once_and_quietly(fake_openai, model):
    fake_openai.script(FakeReply(text="Hello there", hang=True))
    cancel = asyncio.Event()
    stream = stream_chat(model=model, messages=[Message(role="user", content="hi")], cancel=cancel)

    first = await asyncio.wait_for(anext(stream), timeout=30)
    cancel.set()  # the server still holds the stream open (30 s): stopping must not wait it out
    rest = await asyncio.wait_for(_drain(stream), timeout=20)

    assert first.text
    assert not any(d.done for d in rest)


async def _drain(stream):
    return [delta async for delta in stream]


def test_tool_call_arguments_held_as_a_dict_go_out_as_json_text():
    from openprogram.agent.types import ToolCall
    from openprogram.providers import messages_to_wire

    call = ToolCall(id="call_1", name="lookup", arguments={"term": "x"})
    wire = messages_to_wire([Message(role="assistant", content="", tool_calls=[call])])

    assert wire[0]["tool_calls"][0]["function"]["arguments"] == '{"term": "x"}'
    assert wire[0]["content"] is None
