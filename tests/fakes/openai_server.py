"""A real OpenAI-compatible Chat Completions server on 127.0.0.1, scripted per test.

It speaks the streaming wire format litellm's ``openai/`` provider expects
(SSE chunks with text and ``tool_calls`` deltas, arguments split across chunks,
a usage chunk, ``[DONE]``) and real HTTP error statuses. Every request body is
recorded so tests can assert what the framework sent.

    with FakeOpenAIServer() as server:
        server.script(tool_calls_reply(("echo", {"text": "hi"})), text_reply("done"))
        ... model="openai/fake-model", api_base=server.base_url, api_key="test"
        assert server.requests[1]["messages"][-1]["role"] == "tool"

Unscripted requests get HTTP 400 naming the request number, so a test that
makes more model calls than it scripted fails loudly instead of hanging.

A reply can also stream like a real model under load (benchmarks): ``tokens_per_second``
paces its text pieces, and ``stamped_tokens`` sends that many pieces of the form
``t=<time.time_ns()> `` (a word of prose) written at the moment each is sent, so a client
can tell how long every piece took to reach it.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "STAMP_PREFIX",
    "FakeOpenAIServer",
    "FakeReply",
    "error_reply",
    "sse_chunks",
    "stamped_chunk",
    "text_reply",
    "tool_calls_reply",
]

_ARGUMENT_PIECE = 7
_TEXT_PIECE = 5


@dataclass
class FakeReply:
    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    """``{"id", "name", "arguments"}`` where arguments is the raw wire text."""
    status: int = 200
    error_message: str = ""
    hang: bool = False
    """Stop after the text chunks and hold the stream open until release() (Stop tests)."""
    usage: dict[str, Any] | None = None
    """The usage chunk to send as is (known numbers for cost tests); None estimates it."""
    tokens_per_second: float = 0.0
    """Pace of the text pieces (0: as fast as the socket takes them)."""
    stamped_tokens: int = 0
    """Text pieces ``t=<ns> `` stamped when sent, streamed before ``text``.

    Words separated by spaces, as a model's prose is: a piece per line would make the
    reply a 300-line document and its markdown cost six times what a reply costs."""
    broken_chunk: str = ""
    """Sent as is as the data of one event after the text pieces, and then the stream ends
    there (no finish reason, usage or ``[DONE]``): a provider's error object mid-stream,
    or a chunk that is not JSON."""
    cut_after_text: bool = False
    """End the stream (close the connection) right after the text pieces."""


STAMP_PREFIX = "t="
"""Starts each stamped piece; the rest of the line is ``time.time_ns()`` at sending."""


def text_reply(text: str) -> FakeReply:
    return FakeReply(text=text)


def tool_calls_reply(*calls: tuple[str, dict[str, Any] | str], text: str = "") -> FakeReply:
    """One reply asking for ``calls``; a str argument is sent verbatim (malformed JSON tests)."""
    return FakeReply(
        text=text,
        tool_calls=[
            {
                "id": f"call_{uuid.uuid4().hex[:10]}",
                "name": name,
                "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
            }
            for name, arguments in calls
        ],
    )


def error_reply(status: int, message: str = "") -> FakeReply:
    return FakeReply(status=status, error_message=message or f"fake server error {status}")


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def sse_chunks(reply: FakeReply, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The JSON chunks (``data:`` events, before ``[DONE]``) this server streams for ``reply``.

    With ``stamped_tokens``, the stamped pieces (:func:`stamped_chunk`) go between the
    first chunk (the role) and the rest. ``bench._paced_model`` builds its streams here
    too, so both speak the same wire format.
    """
    model = body.get("model", "fake-model")
    prompt_chars = len(json.dumps(body.get("messages", [])))
    base = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:8]}",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": piece}) for piece in _pieces(reply.text, _TEXT_PIECE)]
    for index, call in enumerate(reply.tool_calls):
        head = {
            "index": index,
            "id": call["id"],
            "type": "function",
            "function": {"name": call["name"], "arguments": ""},
        }
        chunks.append(chunk({"tool_calls": [head]}))
        for piece in _pieces(call["arguments"], _ARGUMENT_PIECE):
            chunks.append(
                chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            )
    chunks.append(chunk({}, "tool_calls" if reply.tool_calls else "stop"))
    completion = max(1, len(reply.text) // 4) + 10 * len(reply.tool_calls)
    prompt = max(1, prompt_chars // 4)
    usage = reply.usage or {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    chunks.append({**base, "choices": [], "usage": usage})
    return chunks


def stamped_chunk(first: dict[str, Any], sent_ns: int) -> dict[str, Any]:
    """A stamped text piece ``t=<sent_ns> ``, in the stream whose role chunk is ``first``."""
    delta = {"content": f"{STAMP_PREFIX}{sent_ns} "}
    return {**first, "choices": [{"index": 0, "delta": delta}]}


class _Server(ThreadingHTTPServer):
    # socketserver's listen backlog is 5: 100 simultaneous model calls (the streaming load
    # benchmark) overflowed it, and dropped connections were retried by TCP a second or
    # three later, which the benchmark then counted as the server's time to first token.
    request_queue_size = 1024


class FakeOpenAIServer:
    """Start with ``with FakeOpenAIServer() as server`` (or start()/stop())."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._replies: deque[FakeReply] = deque()
        self._responder: Callable[[dict[str, Any]], FakeReply] | None = None
        self._lock = threading.Lock()
        self._released = threading.Event()
        self.holding = threading.Event()
        """Set once a hanging reply has sent all its text and waits for :meth:`release`."""
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("the fake OpenAI server is not running; call start() first")
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def script(self, *replies: FakeReply) -> None:
        """Queue replies, one per model request, in order."""
        with self._lock:
            self._replies.extend(replies)

    def reset(self) -> None:
        """Forget recorded requests, the script and the responder (between tests)."""
        with self._lock:
            self.requests.clear()
            self._replies.clear()
        self._responder = None
        self.release()
        self._released = threading.Event()
        self.holding = threading.Event()

    def release(self) -> None:
        """Let every hanging reply finish."""
        self._released.set()

    def respond_with(self, responder: Callable[[dict[str, Any]], FakeReply] | None) -> None:
        """Answer every request not covered by the script with ``responder(request_body)``."""
        self._responder = responder

    def _next_reply(self, body: dict[str, Any]) -> FakeReply:
        with self._lock:
            self.requests.append(body)
            number = len(self.requests)
            if self._replies:
                return self._replies.popleft()
        if self._responder is not None:
            return self._responder(body)
        return error_reply(400, f"fake server: no scripted reply left for request #{number}")

    def start(self) -> FakeOpenAIServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                reply = server._next_reply(body)
                self.close_connection = True
                if reply.status != 200:
                    payload = json.dumps(
                        {
                            "error": {
                                "message": reply.error_message,
                                "type": "fake_error",
                                "code": reply.status,
                            }
                        }
                    ).encode()
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                # The client may stop reading (a Stop test): nothing is left to send then.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self._stream(reply, body)

            def _stream(self, reply: FakeReply, body: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                chunks = sse_chunks(reply, body)
                if reply.stamped_tokens:
                    self._stream_stamped(reply, chunks[0])
                    chunks = chunks[1:]
                text_chunks = len(_pieces(reply.text, _TEXT_PIECE))
                for number, chunk in enumerate(chunks):
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                    if number != text_chunks:  # the role chunk, then the text pieces
                        continue
                    if reply.hang:
                        server.holding.set()
                        server._released.wait(timeout=30)
                    if reply.broken_chunk:
                        self.wfile.write(f"data: {reply.broken_chunk}\n\n".encode())
                        self.wfile.flush()
                    if reply.broken_chunk or reply.cut_after_text:
                        return
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

            def _stream_stamped(self, reply: FakeReply, first: dict[str, Any]) -> None:
                """The role chunk, then ``stamped_tokens`` pieces at the reply's pace."""
                self.wfile.write(f"data: {json.dumps(first)}\n\n".encode())
                gap = 1 / reply.tokens_per_second if reply.tokens_per_second else 0.0
                due = time.monotonic()
                for _ in range(reply.stamped_tokens):
                    due += gap
                    time.sleep(max(0.0, due - time.monotonic()))
                    piece = stamped_chunk(first, time.time_ns())
                    self.wfile.write(f"data: {json.dumps(piece)}\n\n".encode())
                    self.wfile.flush()

        self._httpd = _Server(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.release()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
