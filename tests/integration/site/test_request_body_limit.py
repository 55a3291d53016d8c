"""Oversize request bodies are refused while they arrive, by the real daphne, before login."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
import requests

from tests.servers import DaphneServer, make_server

LIMIT = 200_000


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[DaphneServer]:
    srv = make_server(
        tmp_path_factory.mktemp("body-home"), OPENPROGRAM_MAX_REQUEST_BYTES=str(LIMIT)
    )
    srv.start()
    yield srv
    srv.stop()


def _raw(server: DaphneServer, head: bytes, body_parts: list[bytes]) -> bytes:
    """Send a request piece by piece; what the server answered (a refused send is fine)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as conn:
        conn.sendall(head)
        try:
            for part in body_parts:
                conn.sendall(part)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed before the whole body was sent
        answer = b""
        try:
            while chunk := conn.recv(65536):
                answer += chunk
        except ConnectionResetError:
            pass
    return answer


def test_a_declared_body_over_the_limit_is_refused_before_it_is_sent(server):
    head = (
        b"POST /api/attachments HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/octet-stream\r\n"
        b"Content-Length: 50000000000\r\n\r\n"
    )
    # Only the headers and a little of the 50 GB: the answer comes at once.
    answer = _raw(server, head, [b"x" * 1000])
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"too large" in answer


def test_a_chunked_body_is_cut_off_once_it_passes_the_limit(server):
    head = (
        b"POST /login/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/x-www-form-urlencoded\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
    )
    piece = b"a" * 50_000
    chunks = [b"%x\r\n%s\r\n" % (len(piece), piece) for _ in range(20)] + [b"0\r\n\r\n"]
    answer = _raw(server, head, chunks)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]


def test_bodies_under_the_limit_still_reach_the_application_and_the_server_lives_on(server):
    # Before and after the refusals: the app answers (a CSRF 403 is the app speaking).
    answer = requests.post(f"{server.url}/login/", data={"x": "y" * (LIMIT // 2)}, timeout=10)
    assert answer.status_code == 403
    assert requests.get(f"{server.url}/healthz", timeout=10).status_code == 200
    assert server.proc.poll() is None
