"""`manage.py serve` (what `make run` calls): migrate, print a link, serve, stop on Ctrl-C."""

import asyncio
import contextlib
import http.cookiejar
import signal
import sys
import urllib.error
import urllib.request

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from openprogram_site.origins import CLOSE_FOREIGN_ORIGIN
from tests.servers import ROOT, ServeProcess, free_port, wait_for_http


@contextlib.contextmanager
def _serving(tmp_path, *, port: int, port_in_environment: bool, sigint_ignored: bool = False):
    """`manage.py serve --port PORT` as `make run` starts it; yields it and its login link.
    Ctrl-C ends it (a failure if it has not stopped a minute later, so none outlives a test)."""
    env = {"PATH": "/usr/bin:/bin", "OPENPROGRAM_HOME": str(tmp_path)}
    if port_in_environment:
        env["PORT"] = str(port)
    serve = ServeProcess(
        [sys.executable, "manage.py", "serve", "--port", str(port)],
        cwd=ROOT,
        env=env,
        sigint_ignored=sigint_ignored,
    )
    try:
        assert serve.link, "serve printed no login link:\n" + "".join(serve.output)
        wait_for_http(f"http://127.0.0.1:{port}/healthz", proc=serve.proc)
        yield serve.proc, serve.link
    finally:
        serve.stop_with_ctrl_c()


def test_serve_prints_a_one_time_link_and_stops_cleanly_on_ctrl_c(tmp_path):
    port = free_port()
    with _serving(tmp_path, port=port, port_in_environment=True) as (proc, link):
        opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
        with opener.open(link) as resp:
            assert resp.status == 200
            assert 'data-testid="username"' in resp.read().decode()
        try:
            urllib.request.urlopen(link)
            raise AssertionError("a spent login link worked a second time")
        except urllib.error.HTTPError as exc:
            assert exc.code == 403
        assert (tmp_path / "db.sqlite3").exists()
    assert proc.returncode in (0, -signal.SIGINT)


def test_ctrl_c_stops_serve_even_when_its_parent_ignored_ctrl_c(tmp_path):
    """An ignored SIGINT survives exec: daphne's reactor would never see Ctrl-C (a serve
    started by a shell's background job, or a test worker that ignores it)."""
    port = free_port()
    with _serving(tmp_path, port=port, port_in_environment=True, sigint_ignored=True) as (
        proc,
        _,
    ):
        assert proc.poll() is None
    assert proc.returncode in (0, -signal.SIGINT)


async def _socket_close_code(*, port: int, origin: str, cookie: str) -> int | None:
    url = f"ws://127.0.0.1:{port}/ws/chat/nosuchconversation/"
    async with connect(url, origin=origin, additional_headers={"Cookie": cookie}) as socket:
        with contextlib.suppress(ConnectionClosed):
            await asyncio.wait_for(socket.recv(), timeout=15)
        return socket.close_code


def test_serve_on_another_port_without_port_in_the_environment_accepts_its_own_pages(tmp_path):
    """`serve --port N` alone: the page's own origin (that port) is the exact origin."""
    port = free_port()
    with _serving(tmp_path, port=port, port_in_environment=False) as (_, link):
        jar = http.cookiejar.CookieJar()
        urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar)).open(link).close()
        cookie = "; ".join(f"{c.name}={c.value}" for c in jar)
        own = asyncio.run(
            _socket_close_code(port=port, origin=f"http://127.0.0.1:{port}", cookie=cookie)
        )
        foreign = asyncio.run(
            _socket_close_code(port=port, origin="http://127.0.0.1:8000", cookie=cookie)
        )
    assert own != CLOSE_FOREIGN_ORIGIN, "the page's own origin was refused"
    assert own == 4404  # past the origin and login checks: no such conversation
    assert foreign == CLOSE_FOREIGN_ORIGIN
