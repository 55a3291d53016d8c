"""The burst floor bench's pieces: a first stamped piece read and the connection let go,
and the paced model server carrying on cleanly when a client leaves mid-stream."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import aiohttp

from bench._paced_model import serve
from bench._proc import process_threads_cpu_ns
from bench.bench_burst_floor import first_piece_text, request_body
from tests.fakes.openai_server import STAMP_PREFIX

_RATE, _TOKENS = 200.0, 20


async def test_a_first_piece_is_a_stamp_and_the_server_carries_on_when_the_client_leaves():
    loop = asyncio.get_running_loop()
    errors: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    server = await serve(_RATE, _TOKENS)
    host, port = server.sockets[0].getsockname()[:2]
    url = f"http://{host}:{port}/v1/chat/completions"
    try:
        async with aiohttp.ClientSession() as session:
            before = time.time_ns()
            first = await first_piece_text(session, url, request_body())
            # The client hung up after one piece; the next call is answered in full.
            again = await first_piece_text(session, url, request_body())
        await asyncio.sleep(3 * _TOKENS / _RATE)  # the abandoned streams' ticks come due
    finally:
        server.close()
        await server.wait_closed()
    assert first.startswith(STAMP_PREFIX) and again.startswith(STAMP_PREFIX)
    assert before <= int(first.removeprefix(STAMP_PREFIX)) <= int(again.removeprefix(STAMP_PREFIX))
    assert errors == []


def test_a_request_body_is_the_size_of_a_turns_first_model_call():
    body = request_body()
    assert 10_000 < len(body) < 14_000  # 11 tool schemas, as a turn offers
    assert b'"stream": true' in body


def test_threads_cpu_counts_what_a_thread_of_the_process_burnt():
    me = os.getpid()
    before = process_threads_cpu_ns(me)
    start = time.thread_time()
    while time.thread_time() - start < 0.05:
        pass
    # The kernel brings a running thread's count up to date at its ticks: allow one tick.
    assert process_threads_cpu_ns(me) - before >= 0.04e9
