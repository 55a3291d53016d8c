"""A model that streams like a real one, for the load benchmarks, cheap enough not to skew them.

``python -m bench._paced_model TOKENS_PER_SECOND TOKENS_PER_CALL [LATENCY_S]`` prints
``URL=<base url>`` and serves OpenAI-compatible streaming chat completions until its stdin
closes. ``LATENCY_S`` (default 0) is the model's own time before it answers each call (a
hosted model's queueing and prompt processing); the first text piece then follows one
pacing gap after the role chunk.
Every chat turn gets two calls: the first streams ``TOKENS_PER_CALL`` stamped text pieces
(``t=<time.time_ns()> ``, stamped when written) and asks for ``todo_read`` and
``list_dir``; the second (after the tool results) streams as many and stops.

The chunks are ``tests.fakes.openai_server``'s (:func:`sse_chunks`, :func:`stamped_chunk`),
so the wire format is the tests' fake server's; what differs is the serving. That server
runs a thread per stream, sleeping between pieces and encoding each one as JSON: with 100
streams that is 100 threads contending for one GIL, a real share of a 2-core machine the
benchmark then takes from the server it measures. Here one event loop paces every stream
with loop timers (``call_at``, one per piece) and writes pre-built bytes with only the
stamp filled in. Its own process, so the clients that time the pieces do not share its GIL.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from typing import Any

from tests.fakes.openai_server import FakeReply, sse_chunks, stamped_chunk, tool_calls_reply

__all__ = ["MODEL", "TOOLS_PER_TURN", "paced_model_start", "paced_reply", "serve"]

MODEL = "openai/paced"
TOOLS_PER_TURN = 2

_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
    b"Connection: close\r\n\r\n"
)
_MARK = 1_234_567_890_123_456_789
"""A stand-in stamp: the pre-built piece is split where it stands (19 digits, as time_ns)."""


def paced_reply(body: dict[str, Any], *, rate: float, tokens: int) -> FakeReply:
    """The reply to one call: tools first, then (after the tool results) the final text."""
    messages = body.get("messages") or [{}]
    if messages[-1].get("role") == "tool":
        answer = FakeReply()
    else:
        answer = tool_calls_reply(("todo_read", {}), ("list_dir", {}))
    answer.tokens_per_second, answer.stamped_tokens = rate, tokens
    return answer


def _event(chunk: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(chunk)}\n\n".encode()


class _PacedStream:
    """One response: the role chunk at once, a stamped piece per tick, then the rest."""

    def __init__(
        self, transport: asyncio.WriteTransport, reply: FakeReply, body: dict[str, Any]
    ) -> None:
        chunks = sse_chunks(reply, body)
        before, after = _event(stamped_chunk(chunks[0], _MARK)).split(str(_MARK).encode())
        self._before, self._after = before, after
        self._rest = b"".join(_event(chunk) for chunk in chunks[1:]) + b"data: [DONE]\n\n"
        self._transport = transport
        self._left = reply.stamped_tokens
        self._gap = 1 / reply.tokens_per_second if reply.tokens_per_second else 0.0
        self._loop = asyncio.get_running_loop()
        self._due = self._loop.time()
        self.done: asyncio.Future[None] = self._loop.create_future()
        transport.write(_HEAD + _event(chunks[0]))
        self._next()

    def _next(self) -> None:
        if not self._left:
            self._transport.write(self._rest)
            self.done.set_result(None)
            return
        # Due times advance by the gap from the start, so a late tick does not drift the pace.
        self._due += self._gap
        self._loop.call_at(self._due, self._piece)

    def _piece(self) -> None:
        if self._transport.is_closing():  # the client stopped reading (a cancelled turn)
            if not self.done.done():  # cancelled with its connection's task
                self.done.set_result(None)
            return
        self._transport.write(self._before + str(time.time_ns()).encode() + self._after)
        self._left -= 1
        self._next()


async def _request_body(reader: asyncio.StreamReader) -> dict[str, Any]:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return json.loads(await reader.readexactly(length) or b"{}")


async def serve(
    rate: float, tokens: int, *, latency: float = 0.0, host: str = "127.0.0.1"
) -> asyncio.Server:
    """Start serving on a free port of ``host``, each answer ``latency`` seconds after its
    request; the caller closes the returned server."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            body = await _request_body(reader)
            if latency:
                await asyncio.sleep(latency)
            stream = _PacedStream(
                writer.transport, paced_reply(body, rate=rate, tokens=tokens), body
            )
            await stream.done
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client went away: nothing is left to answer
        finally:
            writer.close()

    # 100 simultaneous model calls must not overflow the listen backlog (see the tests' server).
    return await asyncio.start_server(answer, host, 0, backlog=1024)


async def _main(rate: float, tokens: int, latency: float) -> None:
    server = await serve(rate, tokens, latency=latency)
    host, port = server.sockets[0].getsockname()[:2]
    print(f"URL=http://{host}:{port}/v1", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    server.close()


def paced_model_start(
    rate: float, tokens: int, latency: float = 0.0
) -> tuple[subprocess.Popen[str], str]:
    """Start this server in its own process (answering ``latency`` seconds after each
    request): the process (its stdin open; closing it stops the server) and its base URL."""
    from tests.servers import ROOT

    proc = subprocess.Popen(
        [sys.executable, "-m", "bench._paced_model", str(rate), str(tokens), str(latency)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("URL="):
        proc.kill()
        raise RuntimeError(f"the paced model server did not start: {line!r}")
    return proc, line.strip().removeprefix("URL=")


if __name__ == "__main__":
    latency = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    asyncio.run(_main(float(sys.argv[1]), int(sys.argv[2]), latency))
