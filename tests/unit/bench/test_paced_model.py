"""The load benchmarks' paced model server streams what the tests' fake server streams."""

from __future__ import annotations

import asyncio
import http.client
import json
import time
from typing import Any

from bench._paced_model import paced_reply, serve
from tests.fakes.openai_server import STAMP_PREFIX, FakeOpenAIServer

_RATE, _TOKENS = 500.0, 4
_BODY = {"model": "paced", "messages": [{"role": "user", "content": "read the todos"}]}
_AFTER_TOOLS = {
    "model": "paced",
    "messages": [*_BODY["messages"], {"role": "tool", "content": "[]", "tool_call_id": "c1"}],
}


def _events(raw: bytes) -> list[Any]:
    """The stream's ``data:`` events, decoded, with the random id and the stamps masked."""
    events: list[Any] = []
    for block in raw.decode().split("\n\n"):
        if not block:
            continue
        assert block.startswith("data: "), block
        data = block.removeprefix("data: ")
        if data == "[DONE]":
            events.append(data)
            continue
        chunk = json.loads(data)
        chunk["id"] = "ID"
        for choice in chunk["choices"]:
            content = choice["delta"].get("content", "")
            if content.startswith(STAMP_PREFIX):
                choice["delta"]["content"] = STAMP_PREFIX + "N"
            for call in choice["delta"].get("tool_calls", []):
                if "id" in call:
                    call["id"] = "CALL"
        events.append(chunk)
    return events


def _stamps(raw: bytes) -> list[int]:
    return [
        int(piece.split(STAMP_PREFIX, 1)[1].split(" ", 1)[0])
        for piece in raw.decode().split("\n\n")
        if STAMP_PREFIX in piece
    ]


def _post(host: str, port: int, body: dict[str, Any]) -> tuple[str, bytes]:
    connection = http.client.HTTPConnection(host, port, timeout=10)
    connection.request("POST", "/v1/chat/completions", json.dumps(body))
    response = connection.getresponse()
    return response.getheader("Content-Type") or "", response.read()


def _from_tests_server(body: dict[str, Any]) -> tuple[str, bytes]:
    with FakeOpenAIServer() as fake:
        fake.respond_with(lambda request: paced_reply(request, rate=_RATE, tokens=_TOKENS))
        host, port = fake.base_url.split("//")[1].split("/")[0].split(":")
        return _post(host, int(port), body)


async def _from_paced_server(body: dict[str, Any], latency: float = 0.0) -> tuple[str, bytes]:
    server = await serve(_RATE, _TOKENS, latency=latency)
    host, port = server.sockets[0].getsockname()[:2]
    try:
        return await asyncio.to_thread(_post, host, port, body)
    finally:
        server.close()
        await server.wait_closed()


async def test_a_tool_call_stream_matches_the_tests_fake_server_chunk_for_chunk():
    expected_type, expected = _from_tests_server(_BODY)
    content_type, got = await _from_paced_server(_BODY)
    assert content_type == expected_type == "text/event-stream"
    assert _events(got) == _events(expected)
    assert any(
        "tool_calls" in e["choices"][0]["delta"] for e in _events(got)[1:-2] if e != "[DONE]"
    )


async def test_the_answer_after_tool_results_matches_the_tests_fake_server_too():
    _, expected = _from_tests_server(_AFTER_TOOLS)
    _, got = await _from_paced_server(_AFTER_TOOLS)
    assert _events(got) == _events(expected)
    assert _events(got)[-3]["choices"][0]["finish_reason"] == "stop"


async def test_each_piece_is_stamped_when_written_and_never_before_its_due_time():
    before = time.time_ns()
    _, raw = await _from_paced_server(_BODY)
    after = time.time_ns()
    stamps = _stamps(raw)
    assert len(stamps) == _TOKENS
    assert before <= stamps[0] <= stamps[-1] <= after
    assert stamps == sorted(stamps)
    # Piece i is due (i + 1) gaps after the stream starts. A late tick may be followed at once
    # by the next (the pace does not drift), so gaps can shrink, but no piece comes early.
    gap_ns = 1e9 / _RATE
    assert all(stamp - before >= (i + 1) * gap_ns for i, stamp in enumerate(stamps)), [
        (stamp - before) / 1e6 for stamp in stamps
    ]


async def test_a_model_latency_delays_every_piece_by_at_least_that_wait():
    latency = 0.1
    before = time.time_ns()
    _, raw = await _from_paced_server(_BODY, latency=latency)
    stamps = _stamps(raw)
    assert len(stamps) == _TOKENS
    # The answer starts no earlier than the wait; the first piece one gap after that.
    assert stamps[0] - before >= latency * 1e9 + 1e9 / _RATE, (stamps[0] - before) / 1e6
    _, expected = _from_tests_server(_BODY)
    assert _events(raw) == _events(expected)  # the same stream, only later
