"""OpenProgram's own OpenAI transport: which calls it takes, its setting, its connections.

test_provider_transports.py checks the behaviour both transports share; this checks what
only ours has: the cached route litellm resolves, the connection pool, Stop closing the
connection of a stream still running (against a real keep-alive aiohttp.web server).
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging

import pytest

from openprogram.agent.types import AgentTool, Message
from openprogram.providers import ProviderError, openai_http, stream_chat
from openprogram.providers._litellm_setup import load_litellm
from openprogram.providers.openai_route import fallback_reasons, openai_route
from tests.component.agent.conftest import FAKE_MODEL, FAST_RETRY
from tests.component.agent.http_doubles import ScriptedHTTPServer, raw_response
from tests.fakes.openai_server import text_reply


async def _collect(**kwargs):
    deltas = []
    try:
        async for delta in stream_chat(
            model=FAKE_MODEL,
            messages=[Message(role="user", content="hi")],
            retry=FAST_RETRY,
            **kwargs,
        ):
            deltas.append(delta)
    except ProviderError as error:
        return deltas, error
    return deltas, None


async def _drain(stream):
    return [delta async for delta in stream]


def _text(deltas) -> str:
    return "".join(d.text for d in deltas)


def test_openai_calls_get_our_route_once_and_other_models_stay_on_litellm(monkeypatch):
    monkeypatch.delenv("OPENPROGRAM_OPENAI_TRANSPORT", raising=False)
    litellm = load_litellm()
    resolved = []
    real = litellm.get_llm_provider

    def spy(*args, **kwargs):
        resolved.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(litellm, "get_llm_provider", spy)
    base = "http://127.0.0.1:9/v1"

    def route(model, key="k"):
        return openai_route(litellm, model, api_base=base, api_key=key)

    first = route("openai/served-model")
    assert first is not None and first.url == base + "/chat/completions"
    assert first.model == "served-model" and "k" not in repr(first)
    assert route("openai/served-model") is first
    assert resolved.count("openai/served-model") == 1  # cached: litellm asked once
    assert route("openai/gpt-4o-mini") is not None
    # Models litellm rewrites, other providers, and calls without a key stay on litellm.
    for model in ("openai/o3-mini", "openai/gpt-5", "hosted_vllm/x", "anthropic/claude-x"):
        assert route(model) is None, model
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert route("openai/served-model", key=None) is None
    monkeypatch.setenv("OPENPROGRAM_OPENAI_TRANSPORT", "litellm")
    assert route("openai/served-model") is None
    monkeypatch.setenv("OPENPROGRAM_OPENAI_TRANSPORT", "curl")
    with pytest.raises(ValueError, match="OPENPROGRAM_OPENAI_TRANSPORT"):
        route("openai/served-model")


def test_a_fall_back_to_litellm_is_warned_once_per_model_and_reason(monkeypatch, caplog):
    monkeypatch.delenv("OPENPROGRAM_OPENAI_TRANSPORT", raising=False)
    litellm = load_litellm()
    base = "http://127.0.0.1:9/v1"

    def route(model, key="k"):
        # A fresh key each time: the route cache must not be what keeps warnings to one.
        return openai_route(litellm, model, api_base=base + f"?{key}", api_key=key)

    with caplog.at_level(logging.WARNING, logger="openprogram.providers.openai_route"):
        for key in ("k1", "k2", "k3"):
            assert route("openai/o4-mini", key) is None
        assert route("anthropic/claude-warned-once") is None
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 2, warned
    assert "'openai/o4-mini'" in warned[0] and "rewrites its requests" in warned[0]
    assert "'anthropic/claude-warned-once'" in warned[1] and "'anthropic'" in warned[1]
    assert ("openai/o4-mini", warned[0].split(": ", 1)[1]) in fallback_reasons()


def test_a_litellm_that_moved_what_is_asked_of_it_is_warned_and_litellm_sends(monkeypatch, caplog):
    monkeypatch.delenv("OPENPROGRAM_OPENAI_TRANSPORT", raising=False)
    litellm = load_litellm()

    def moved(*args, **kwargs):
        raise AttributeError("module 'litellm' has no attribute 'get_llm_provider'")

    monkeypatch.setattr(litellm, "get_llm_provider", moved)
    with caplog.at_level(logging.WARNING, logger="openprogram.providers.openai_route"):
        route = openai_route(
            litellm, "openai/moved-model", api_base="http://127.0.0.1:9/v1", api_key="k"
        )
    assert route is None
    [warning] = [r.getMessage() for r in caplog.records]
    assert "'openai/moved-model'" in warning
    assert "litellm could not be asked for the route (AttributeError" in warning


async def test_a_misspelt_transport_setting_fails_the_call_readably(fake_openai, monkeypatch):
    monkeypatch.setenv("OPENPROGRAM_OPENAI_TRANSPORT", "curl")

    deltas, error = await _collect()

    assert deltas == [] and error is not None and error.kind == "provider_bad_request"
    assert "OPENPROGRAM_OPENAI_TRANSPORT must be 'openprogram' or 'litellm'" in error.message
    assert fake_openai.requests == []


def _sse(chunk: dict) -> bytes:
    return f"data: {json.dumps(chunk)}\n\n".encode()


@pytest.fixture
async def keep_alive_server():
    """A real keep-alive HTTP/1.1 server (aiohttp.web, chunked replies): the client port of
    every request, and whether a held-open reply saw its client go away."""
    from aiohttp import web

    state = {"peers": [], "hold": False, "client_gone": asyncio.Event()}

    async def chat(request):
        state["peers"].append(request.transport.get_extra_info("peername"))
        await request.read()
        reply = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await reply.prepare(request)
        await reply.write(_sse({"choices": [{"index": 0, "delta": {"content": "Hello"}}]}))
        while state["hold"]:  # a model still streaming, until its client goes away
            await asyncio.sleep(0.02)
            try:
                await reply.write(b": still thinking\n\n")
            except (ConnectionResetError, RuntimeError):
                state["client_gone"].set()
                return reply
        await reply.write(_sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
        await reply.write(b"data: [DONE]\n\n")
        await reply.write_eof()
        return reply

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    state["api_base"] = f"http://127.0.0.1:{port}/v1"
    yield state
    await runner.cleanup()


async def test_a_finished_stream_hands_its_connection_to_the_next_call(
    keep_alive_server, monkeypatch
):
    monkeypatch.delenv("OPENPROGRAM_OPENAI_TRANSPORT", raising=False)

    for _ in range(3):
        deltas, error = await _collect(api_base=keep_alive_server["api_base"], api_key="k")
        assert error is None and _text(deltas) == "Hello" and deltas[-1].done

    peers = keep_alive_server["peers"]
    assert len(peers) == 3 and len(set(peers)) == 1  # one pooled connection, three calls


async def test_stop_closes_the_connection_of_a_stream_still_running(keep_alive_server, monkeypatch):
    monkeypatch.delenv("OPENPROGRAM_OPENAI_TRANSPORT", raising=False)
    keep_alive_server["hold"] = True
    cancel = asyncio.Event()
    stream = stream_chat(
        model=FAKE_MODEL,
        messages=[Message(role="user", content="hi")],
        cancel=cancel,
        api_base=keep_alive_server["api_base"],
        api_key="k",
    )

    first = await asyncio.wait_for(anext(stream), timeout=30)
    cancel.set()
    rest = await asyncio.wait_for(_drain(stream), timeout=30)  # the server would hold forever

    assert first.text == "Hello" and rest == []
    await asyncio.wait_for(keep_alive_server["client_gone"].wait(), timeout=30)


async def test_a_netrc_entry_for_the_model_host_does_not_clash_with_the_key(
    keep_alive_server, monkeypatch, tmp_path
):
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login someone password elsewhere\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    monkeypatch.delenv("OPENPROGRAM_OPENAI_TRANSPORT", raising=False)

    deltas, error = await _collect(api_base=keep_alive_server["api_base"], api_key="k")

    assert error is None and _text(deltas) == "Hello"


async def test_a_redirect_is_reported_not_followed_with_the_key(monkeypatch):
    monkeypatch.delenv("OPENPROGRAM_OPENAI_TRANSPORT", raising=False)
    with ScriptedHTTPServer() as elsewhere:
        moved = raw_response(307, b"", {"Location": f"{elsewhere.address}/v1/chat"})
        with ScriptedHTTPServer(moved) as server:
            deltas, error = await _collect(api_base=f"{server.address}/v1", api_key="k")

        assert deltas == [] and error is not None
        assert "HTTP 307" in str(error)
        assert elsewhere.requests == []


def _tool(name: str, description: str, **properties: dict) -> AgentTool:
    schema = {"type": "object", "properties": properties or {"q": {"type": "string"}}}
    return AgentTool(name=name, description=description, parameters=schema)


def test_a_request_body_is_the_json_of_the_whole_call_however_often_its_tools_are_sent():
    from openprogram.providers.openai_http import request_body
    from openprogram.providers.openai_route import OpenAIRoute

    route = OpenAIRoute(url="http://127.0.0.1:9/v1/chat/completions", model="m", headers={})
    messages = [{"role": "user", "content": 'say "hi" ✓', "name": None}]
    tools = [
        _tool("lookup", 'Look it up.\nQuoted: "x" \\ ✓').to_wire(),
        {"type": "function", "function": {"name": "bare", "parameters": {}}},  # no description
        {"type": "web_search"},  # not a function tool
    ]
    expected = json.dumps(
        {
            "model": "m",
            "messages": [{"role": "user", "content": 'say "hi" ✓'}],
            "stream": True,
            "stream_options": {"include_usage": True},
            "tools": tools,
        }
    ).encode()

    assert request_body(route, messages, tools) == expected
    assert request_body(route, messages, tools) == expected  # the remembered tool JSON
    assert b'"tools"' not in request_body(route, messages, [])


async def test_each_call_sends_exactly_its_tools_with_their_schema_and_description_as_they_are_now(
    fake_openai,
):
    fake_openai.script(*(text_reply("ok") for _ in range(4)))
    lookup = _tool("lookup", "Look it up.")
    # The same name and words with another schema: an MCP server that changed its tool.
    relisted = _tool("lookup", "Look it up.", term={"type": "integer"})
    reworded = _tool("lookup", "Look it up, now with care.", term={"type": "integer"})
    other = _tool("private_notes", "Read alice's notes.")

    for tools in ([lookup, other], [relisted], [reworded], [lookup]):
        _, error = await _collect(tools=tools)
        assert error is None

    sent = [request["tools"] for request in fake_openai.requests]
    assert sent == [
        [lookup.to_wire(), other.to_wire()],
        [relisted.to_wire()],
        [reworded.to_wire()],
        [lookup.to_wire()],  # only what this call offers: private_notes went with call one
    ]
    assert sent[1][0]["function"]["parameters"]["properties"] == {"term": {"type": "integer"}}


def test_a_dead_loops_pooled_session_is_closed_by_the_next_loop_and_at_exit(recwarn):
    gc.collect()  # what earlier tests left unclosed warns now, not below
    recwarn.clear()

    async def pooled():
        return openai_http._session()

    first = asyncio.run(pooled())  # its loop is closed now, its session still open
    assert not first.closed

    async def next_loop():
        second = openai_http._session()  # finds the dead loop's session and closes it
        await asyncio.gather(*openai_http._closing)
        return second

    second = asyncio.run(next_loop())
    assert first.closed and not second.closed

    openai_http._close_sessions()  # as at exit: the second loop is closed too

    assert second.closed and openai_http._sessions == {}
    ours = (f"{id(first):#x}", f"{id(second):#x}")
    del first, second
    gc.collect()
    unclosed = [str(w.message) for w in recwarn if "nclosed" in str(w.message)]
    assert not [text for text in unclosed if any(address in text for address in ours)]
