"""Both ways an OpenAI-compatible call goes out, against real HTTP servers.

``openprogram`` (the default) sends and reads the call itself over aiohttp;
``litellm`` (``OPENPROGRAM_OPENAI_TRANSPORT=litellm``) sends it with litellm's
``acompletion``. Every behaviour here must hold on both, and each test checks the call
really went the chosen way.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time

import pytest

from openprogram.agent.types import AgentTool, Message, ToolCall
from openprogram.providers import ProviderError, stream_chat
from openprogram.providers._litellm_setup import load_litellm
from tests.component.agent.conftest import FAKE_MODEL, FAST_RETRY
from tests.component.agent.http_doubles import (
    RecordingProxy,
    ScriptedHTTPServer,
    raw_response,
    sse_text_response,
)
from tests.fakes.openai_server import FakeReply, error_reply, text_reply, tool_calls_reply

_LOOKUP = AgentTool(
    name="lookup",
    description="Look something up.",
    parameters={"type": "object", "properties": {"term": {"type": "string"}}},
)
_PROVIDER_ERROR = json.dumps({"error": {"message": "upstream overloaded", "type": "server_error"}})
_CONVERSATION = [
    Message(role="system", content="You are terse."),
    Message(role="user", content="find x"),
    Message(
        role="assistant",
        content="",
        tool_calls=[ToolCall(id="call_1", name="lookup", arguments={"term": "x"})],
    ),
    Message(role="tool", content="x is 42", tool_call_id="call_1", name="lookup"),
    Message(role="user", content="and y?"),
]


@pytest.fixture(params=["openprogram", "litellm"])
def transport(request, monkeypatch):
    """Run the test on one transport; afterwards check litellm sent the calls, or did not."""
    monkeypatch.setenv("OPENPROGRAM_OPENAI_TRANSPORT", request.param)
    litellm = load_litellm()
    sent_by_litellm = []
    real = litellm.acompletion

    async def spy(*args, **kwargs):
        sent_by_litellm.append(kwargs["model"])
        return await real(*args, **kwargs)

    monkeypatch.setattr(litellm, "acompletion", spy)
    yield request.param
    if request.param == "openprogram":
        assert sent_by_litellm == [], "an openai/ call went through litellm's acompletion"
    else:
        assert sent_by_litellm, "no call went through litellm's acompletion"


async def _collect(model: str = FAKE_MODEL, **kwargs):
    deltas = []
    kwargs.setdefault("messages", [Message(role="user", content="hi")])
    kwargs.setdefault("retry", FAST_RETRY)
    try:
        async for delta in stream_chat(model=model, **kwargs):
            deltas.append(delta)
    except ProviderError as error:
        return deltas, error
    return deltas, None


def _text(deltas) -> str:
    return "".join(d.text for d in deltas)


async def test_a_reply_gives_text_tool_calls_finish_and_exact_usage(fake_openai, transport):
    reply = tool_calls_reply(("lookup", {"term": "a fairly long search term"}), text="Let me see")
    reply.usage = {
        "prompt_tokens": 120,
        "completion_tokens": 17,
        "total_tokens": 137,
        "prompt_tokens_details": {"cached_tokens": 64},
    }
    fake_openai.script(reply)

    deltas, error = await _collect(tools=[_LOOKUP])

    assert error is None
    assert _text(deltas) == "Let me see"
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


async def test_both_transports_send_the_same_json_body(fake_openai, monkeypatch):
    fake_openai.script(text_reply("one"), text_reply("two"))

    for name in ("litellm", "openprogram"):
        monkeypatch.setenv("OPENPROGRAM_OPENAI_TRANSPORT", name)
        deltas, error = await _collect(messages=_CONVERSATION, tools=[_LOOKUP])
        assert error is None and deltas[-1].done

    by_litellm, by_us = fake_openai.requests
    assert by_us == by_litellm
    assert by_us["model"] == "fake-model"
    assert by_us["stream"] is True and by_us["stream_options"] == {"include_usage": True}
    assert by_us["tools"] == [_LOOKUP.to_wire()]
    assert "content" not in by_us["messages"][2]  # a tool-calls-only message, as litellm sends it


async def test_the_key_organization_and_project_go_out_as_headers(transport, monkeypatch):
    monkeypatch.setenv("OPENAI_ORGANIZATION", "org-alice")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-alice")
    with ScriptedHTTPServer(sse_text_response("hello")) as server:
        deltas, error = await _collect(api_base=server.address + "/v1", api_key="sk-alice")

    assert error is None and _text(deltas) == "hello"
    ((line, headers, _),) = server.requests
    assert line.startswith("POST /v1/chat/completions ")
    assert headers["authorization"] == "Bearer sk-alice"
    assert headers["openai-organization"] == "org-alice"
    assert headers["openai-project"] == "proj-alice"
    assert headers["user-agent"]
    assert headers["content-type"] == "application/json"


async def test_a_provider_error_mid_stream_ends_the_call_after_the_text_before_it(
    fake_openai, transport
):
    fake_openai.script(FakeReply(text="Hello there", broken_chunk=_PROVIDER_ERROR))

    deltas, error = await _collect()

    assert _text(deltas) == "Hello there"
    assert not any(d.done for d in deltas)
    assert error is not None and error.kind == "provider_unavailable"
    assert "upstream overloaded" in error.message
    assert error.attempts == 1  # text went out: a retry would repeat it
    assert len(fake_openai.requests) == 1


async def test_a_provider_error_before_any_text_is_retried(fake_openai, transport):
    fake_openai.script(FakeReply(broken_chunk=_PROVIDER_ERROR), text_reply("second try"))

    deltas, error = await _collect()

    assert error is None and _text(deltas) == "second try"
    assert len(fake_openai.requests) == 2


async def test_a_chunk_that_is_not_json_fails_the_call_and_says_what_came(fake_openai, transport):
    fake_openai.script(FakeReply(text="Hello there", broken_chunk='{"choices": [{"delta": '))

    deltas, error = await _collect()

    assert _text(deltas) == "Hello there"
    assert error is not None and error.kind == "provider_unavailable"
    if transport == "openprogram":  # our parser quotes what came
        assert "not JSON" in error.message and '{"choices"' in error.message
    else:  # litellm end to end: its JSON decoder's own words
        assert "Expecting value" in error.message


async def test_a_stream_that_ends_before_a_finish_reason_fails_the_call(fake_openai, transport):
    fake_openai.script(FakeReply(text="Hello there", cut_after_text=True))

    deltas, error = await _collect()

    assert _text(deltas) == "Hello there"
    assert error is not None and error.kind == "provider_unavailable"
    # Ours says "before a finish reason"; litellm's wrapper "before a finish_reason".
    assert re.search(r"before a finish.reason", error.message)


async def test_stop_ends_a_held_open_stream_at_once_and_the_next_call_works(fake_openai, transport):
    fake_openai.script(FakeReply(text="Hello there", hang=True), text_reply("next"))
    cancel = asyncio.Event()
    stream = stream_chat(
        model=FAKE_MODEL, messages=[Message(role="user", content="hi")], cancel=cancel
    )

    first = await asyncio.wait_for(anext(stream), timeout=30)
    cancel.set()  # the server still holds the stream open (30 s): stopping must not wait it out
    rest = await asyncio.wait_for(_drain(stream), timeout=20)
    deltas, error = await _collect()

    assert first.text and not any(d.done for d in rest)
    assert error is None and _text(deltas) == "next"


async def _drain(stream):
    return [delta async for delta in stream]


async def test_text_that_arrived_while_the_caller_was_busy_comes_out_joined(fake_openai, transport):
    fake_openai.script(FakeReply(text="x" * 400, hang=True))  # 80 pieces of 5, then held
    stream = stream_chat(model=FAKE_MODEL, messages=[Message(role="user", content="hi")])

    first = await asyncio.wait_for(anext(stream), timeout=30)
    # Busy until the server has sent every piece (the event loop reads them meanwhile).
    assert await asyncio.to_thread(fake_openai.holding.wait, 30)
    second = await asyncio.wait_for(anext(stream), timeout=30)
    fake_openai.release()
    rest = await asyncio.wait_for(_drain(stream), timeout=30)

    assert first.text + second.text + _text(rest) == "x" * 400
    if transport == "openprogram":  # our reader joins a network read's chunks
        assert len(second.text) > 5 * 10  # many pieces in one, not 80 deltas


@pytest.mark.parametrize(
    ("status", "message", "kind", "attempts"),
    [
        (401, "Incorrect API key provided", "provider_auth", 1),
        (403, "Project does not have access", "provider_auth", 1),
        (404, "The model `fake-model` does not exist", "provider_bad_request", 1),
        (400, "messages: field required", "provider_bad_request", 1),
        (
            400,
            "This model's maximum context length is 8192 tokens, you requested 9000",
            "provider_bad_request",
            1,
        ),
        (429, "Rate limit reached", "provider_unavailable", FAST_RETRY.attempts),
        (500, "The server had an error", "provider_unavailable", FAST_RETRY.attempts),
        (503, "overloaded", "provider_unavailable", FAST_RETRY.attempts),
    ],
)
async def test_http_errors_map_to_their_kind_with_the_providers_message(
    fake_openai, transport, status, message, kind, attempts
):
    fake_openai.respond_with(lambda body: error_reply(status, message))

    deltas, error = await _collect()

    assert deltas == []
    assert error is not None and error.kind == kind
    assert message in error.message and "'openai/fake-model'" in error.message
    assert error.attempts == attempts == len(fake_openai.requests)


async def test_a_5xx_is_retried_until_it_succeeds(fake_openai, transport):
    fake_openai.script(error_reply(500), error_reply(502), text_reply("recovered"))

    deltas, error = await _collect()

    assert error is None and _text(deltas) == "recovered"
    assert len(fake_openai.requests) == 3


async def test_a_rate_limit_waits_what_retry_after_asks(transport):
    limited = raw_response(429, b'{"error": {"message": "slow down"}}', {"Retry-After": "0.4"})
    with ScriptedHTTPServer(limited, sse_text_response("after the wait")) as server:
        started = time.monotonic()
        deltas, error = await _collect(api_base=server.address + "/v1", api_key="k")
        waited = time.monotonic() - started

    assert error is None and _text(deltas) == "after the wait"
    assert waited >= 0.4  # FAST_RETRY alone would wait 0.01 s
    assert len(server.requests) == 2


async def test_a_retry_after_longer_than_a_turn_should_wait_is_reported_at_once(transport):
    limited = raw_response(429, b'{"error": {"message": "quota"}}', {"Retry-After": "3600"})
    with ScriptedHTTPServer(limited, sse_text_response("never")) as server:
        deltas, error = await _collect(api_base=server.address + "/v1", api_key="k")

    assert deltas == [] and error is not None and error.kind == "provider_unavailable"
    assert "quota" in error.message and error.attempts == 1
    assert len(server.requests) == 1


async def test_a_refused_connection_is_unavailable_after_the_retries(transport):
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]

    deltas, error = await _collect(api_base=f"http://127.0.0.1:{closed_port}/v1", api_key="k")

    assert deltas == [] and error is not None
    assert (error.kind, error.attempts) == ("provider_unavailable", FAST_RETRY.attempts)


async def test_a_stream_that_goes_quiet_past_the_timeout_fails_after_its_text(
    fake_openai, transport
):
    fake_openai.script(FakeReply(text="Hello there", hang=True))

    # The text must come inside the read timeout even on a loaded machine; the quiet
    # after it then outlasts the timeout whatever the machine's speed (the reply hangs 30 s).
    deltas, error = await _collect(timeout=2)
    fake_openai.release()

    assert _text(deltas) == "Hello there"
    assert error is not None and error.kind == "provider_unavailable"
    assert error.attempts == 1


async def test_http_proxy_from_the_environment_is_used(fake_openai, transport, monkeypatch):
    fake_openai.script(text_reply("through the proxy"))
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    with RecordingProxy() as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.address)
        deltas, error = await _collect()

    assert error is None and _text(deltas) == "through the proxy"
    ((line, headers, _),) = proxy.requests
    assert line.startswith(f"POST {fake_openai.base_url}/chat/completions ")
    assert headers["authorization"] == "Bearer test"


async def test_no_proxy_hosts_are_reached_directly(fake_openai, transport, monkeypatch):
    fake_openai.script(text_reply("straight there"))
    with RecordingProxy() as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.address)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        deltas, error = await _collect()

    assert error is None and _text(deltas) == "straight there"
    assert proxy.requests == []


async def test_the_api_key_is_never_logged_or_reported(transport, caplog):
    key = "sk-never-show-this-4242"
    refused = raw_response(401, b'{"error": {"message": "Incorrect API key provided"}}')
    caplog.set_level(logging.DEBUG)
    with ScriptedHTTPServer(refused) as server:
        deltas, error = await _collect(api_base=server.address + "/v1", api_key=key)

    assert deltas == [] and error is not None and error.kind == "provider_auth"
    assert key not in error.message and key not in str(error.__cause__)
    assert key not in caplog.text
