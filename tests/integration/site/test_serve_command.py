"""`manage.py serve` (what `make run` calls): migrate, print a link, serve, stop on Ctrl-C."""

import http.cookiejar
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request

from tests.servers import ROOT, free_port, wait_for_http


def _read_link(proc: subprocess.Popen) -> str:
    for line in proc.stdout:
        match = re.search(r"http://127\.0\.0\.1:\d+/login/token/[\w-]+/", line)
        if match:
            return match.group(0)
    raise AssertionError("serve printed no login link")


def test_serve_prints_a_one_time_link_and_stops_cleanly_on_ctrl_c(tmp_path):
    port = free_port()
    env = {"PATH": "/usr/bin:/bin", "OPENPROGRAM_HOME": str(tmp_path), "PORT": str(port)}
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        link = _read_link(proc)
        wait_for_http(f"http://127.0.0.1:{port}/healthz", proc=proc)
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
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=15) is not None
    assert proc.returncode in (0, -signal.SIGINT)
