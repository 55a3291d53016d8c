"""Small real HTTP parties for provider tests: a scripted raw server and a forward proxy.

``ScriptedHTTPServer`` answers each request with the next scripted raw HTTP response
(headers the fake OpenAI server cannot send, e.g. ``Retry-After``) and records the
request line, headers and JSON body. ``RecordingProxy`` is a plain-HTTP forward proxy
(what ``HTTP_PROXY`` points at): it records each request it relays, headers included,
and pipes the answer back, so a test sees what a transport really sent and that it
went through the proxy.
"""

from __future__ import annotations

import json
import socket
import socketserver
import threading
from collections import deque
from typing import Any
from urllib.parse import urlsplit

__all__ = ["RecordingProxy", "ScriptedHTTPServer", "raw_response", "sse_text_response"]


def raw_response(status: int, body: bytes, headers: dict[str, str] | None = None) -> bytes:
    lines = [f"HTTP/1.1 {status} X"]
    for name, value in {"Content-Length": str(len(body)), **(headers or {})}.items():
        lines.append(f"{name}: {value}")
    lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def sse_text_response(text: str) -> bytes:
    chunk = {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}]}
    body = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()
    return b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n" + body


def _read_request(stream: Any) -> tuple[str, dict[str, str], bytes]:
    request_line = stream.readline().decode().rstrip("\r\n")
    headers: dict[str, str] = {}
    while True:
        line = stream.readline().decode().rstrip("\r\n")
        if not line:
            break
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    body = stream.read(int(headers.get("content-length") or 0))
    return request_line, headers, body


class _Threaded(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class _Party:
    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self._server = _Threaded(("127.0.0.1", 0), self._handler())
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def address(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def _handler(self) -> type[socketserver.StreamRequestHandler]:
        party = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                request = _read_request(self.rfile)
                party.requests.append(request)
                party.answer(request, self.wfile)

        return Handler

    def answer(self, request: tuple[str, dict[str, str], bytes], out: Any) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> _Party:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ScriptedHTTPServer(_Party):
    def __init__(self, *responses: bytes) -> None:
        self._responses = deque(responses)
        super().__init__()

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(body) for _, _, body in self.requests]

    def answer(self, request: tuple[str, dict[str, str], bytes], out: Any) -> None:
        out.write(self._responses.popleft() if self._responses else raw_response(500, b"{}"))


class RecordingProxy(_Party):
    def answer(self, request: tuple[str, dict[str, str], bytes], out: Any) -> None:
        line, headers, body = request
        method, url, version = line.split(" ")
        target = urlsplit(url)  # a forward proxy gets the absolute URL
        relayed = {k: v for k, v in headers.items() if not k.startswith("proxy-")}
        relayed["connection"] = "close"
        head = f"{method} {target.path} {version}\r\n" + "".join(
            f"{name}: {value}\r\n" for name, value in relayed.items()
        )
        with socket.create_connection((target.hostname, target.port)) as upstream:
            upstream.sendall(head.encode() + b"\r\n" + body)
            while chunk := upstream.recv(65536):
                out.write(chunk)
                out.flush()
