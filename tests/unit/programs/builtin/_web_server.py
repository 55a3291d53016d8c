"""A real HTTP server on 127.0.0.1 for the web tool tests, with a log of what it served."""

from __future__ import annotations

import gzip
import json
import threading
import zlib
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Route = Callable[["_Handler"], None]
BOMB_DECOMPRESSED_BYTES = 100_000_000


def _gzip_bomb() -> bytes:
    """~100 MB of zeros as a ~100 KB gzip body: small on the wire, huge when inflated."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b"\x00" * 1_000_000
    parts = [deflate.compress(chunk) for _ in range(BOMB_DECOMPRESSED_BYTES // len(chunk))]
    parts.append(deflate.flush())
    return b"".join(parts)


class _Handler(BaseHTTPRequestHandler):
    server: WebTestServer  # type: ignore[assignment]

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def send_body(
        self,
        status: int,
        body: bytes,
        content_type: str | None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        if content_type is not None:
            self.send_header("Content-Type", content_type)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if "Content-Length" not in (headers or {}):
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self.server.requests.append({"path": self.path, "host": self.headers.get("Host", "")})
        route = self.server.routes.get(self.path.split("?")[0])
        if route is None:
            self.send_body(404, b"no such page", "text/plain")
            return
        route(self)


class WebTestServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[dict[str, str]] = []
        self.release = threading.Event()
        """Set at shutdown so a deliberately stalled response ends."""
        self.routes: dict[str, Route] = {}
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self.server_address[1]

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def start(self) -> WebTestServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.release.set()
        self.shutdown()
        self.server_close()
        self._thread.join(timeout=5)


def standard_routes(server: WebTestServer) -> None:
    """Pages every web_fetch test can ask for."""
    html = (
        b"<html><head><title>Test page</title><script>var secret = 1;</script>"
        b"<style>body{color:red}</style></head><body><nav>Menu Home About</nav>"
        b"<h1>Welcome</h1><p>Read <a href='/doc'>the docs</a> now.</p></body></html>"
    )
    bomb = _gzip_bomb()
    routes: dict[str, Route] = {
        "/page.html": lambda h: h.send_body(200, html, "text/html; charset=utf-8"),
        "/text": lambda h: h.send_body(200, b"plain words", "text/plain"),
        "/json": lambda h: h.send_body(200, json.dumps({"a": 1}).encode(), "application/json"),
        "/image": lambda h: h.send_body(200, b"\x89PNG\r\n\x1a\n", "image/png"),
        "/latin1": lambda h: h.send_body(
            200, "café".encode("latin-1"), "text/plain; charset=iso-8859-1"
        ),
        "/missing": lambda h: h.send_body(404, b"gone away", "text/plain"),
        "/echo-host": lambda h: h.send_body(200, h.headers.get("Host", "").encode(), "text/plain"),
        "/redirect-ok": lambda h: h.send_body(302, b"", None, {"Location": "/text"}),
        "/redirect-private": lambda h: h.send_body(
            302, b"", None, {"Location": "http://169.254.169.254/latest/meta-data/"}
        ),
        "/redirect-loop": lambda h: h.send_body(302, b"", None, {"Location": "/redirect-loop"}),
        "/big": lambda h: h.send_body(200, b"a" * 3_000_000, "text/plain"),
        "/big-unannounced": _big_without_length,
        "/gzip-bomb": lambda h: h.send_body(
            200, bomb, "text/plain", {"Content-Encoding": "gzip", "Content-Length": str(len(bomb))}
        ),
        "/gzip-small": lambda h: h.send_body(
            200, gzip.compress(b"squeezed text"), "text/plain", {"Content-Encoding": "gzip"}
        ),
        "/stall": _stall,
    }
    server.routes.update(routes)


def _big_without_length(handler: _Handler) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "text/plain")
    handler.send_header("Connection", "close")
    handler.end_headers()
    try:
        for _ in range(300):  # 3 MB in 10 KB writes, no Content-Length
            handler.wfile.write(b"b" * 10_000)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the client stopped reading at its cap: expected


def _stall(handler: _Handler) -> None:
    handler.server.release.wait(timeout=30)
    handler.send_body(200, b"too late", "text/plain")
