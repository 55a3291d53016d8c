"""`pip install .` gives a server that starts: the wheel, installed in a fresh venv, serves.

The wheel is built from the sdist (as an installer from PyPI would), installed without
its dependencies into a venv of its own, and given the locked dependencies through a
path entry to this checkout's site-packages (no network, no second install of them).
The server runs from a directory outside the checkout, so nothing is imported from it.
"""

from __future__ import annotations

import http.cookiejar
import subprocess
import sys
import sysconfig
import urllib.request
from pathlib import Path

from tests.servers import ROOT, ServeProcess, free_port, wait_for_http

UV = ROOT / ".tools" / "uv" / "bin" / "uv"


def _run(*args: str | Path, **kwargs) -> str:
    done = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=300, **kwargs
    )
    assert done.returncode == 0, f"{args[:3]} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _install_wheel(tmp_path: Path) -> Path:
    dist = tmp_path / "dist"
    _run(UV, "build", "--quiet", "--out-dir", dist, ROOT)
    (wheel,) = dist.glob("openprogram-*.whl")
    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    site = Path(
        _run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip()
    )
    # A bare path line: the checkout's editable-install hook in there is not run.
    (site / "locked-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run(UV, "pip", "install", "--quiet", "--offline", "--no-deps", "--python", python, wheel)
    return venv


def test_the_built_wheel_migrates_serves_and_renders_from_its_own_files(tmp_path):
    venv = _install_wheel(tmp_path)
    home = tmp_path / "home"
    away = tmp_path / "elsewhere"
    away.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home)}

    where = _run(
        venv / "bin" / "python",
        "-c",
        "import openprogram_site, chat_app, usage_app; print(openprogram_site.__file__)",
        cwd=away,
        env=env,
    )
    assert Path(where.strip()).is_relative_to(venv), where

    port = free_port()
    serve = ServeProcess(
        [venv / "bin" / "openprogram", "serve", "--port", str(port)], cwd=away, env=env
    )
    try:
        link = serve.link
        assert link, "serve printed no login link:\n" + "".join(serve.output)
        base = f"http://127.0.0.1:{port}"
        wait_for_http(base + "/healthz", proc=serve.proc)
        with urllib.request.urlopen(base + "/login/") as resp:
            page = resp.read().decode()
        assert resp.status == 200 and 'name="password"' in page
        assert "/static/css/app.css" in page
        with urllib.request.urlopen(base + "/static/css/app.css") as resp:
            assert resp.status == 200 and len(resp.read()) > 1000
        opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
        with opener.open(link) as resp:
            assert resp.status == 200
            assert 'data-testid="username"' in resp.read().decode()
        # The data directory: XDG's default under $HOME, never inside site-packages.
        data = home / ".local" / "share" / "openprogram"
        assert (data / "db.sqlite3").is_file() and (data / "secret_key").is_file()
        assert not list(venv.rglob("db.sqlite3"))
    finally:
        serve.stop_with_ctrl_c()  # never left running past the test
