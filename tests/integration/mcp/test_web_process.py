"""A real daphne process connects stored MCP servers at start-up and closes them at exit."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.servers import PASSWORD, make_server
from tools_app.mcp.models import MCPServer

from .conftest import DEMO_SERVER, WAIT, descendant_pids


def _admin_client(base_url: str) -> httpx.Client:
    client = httpx.Client(base_url=base_url, timeout=10, follow_redirects=False)
    login_page = client.get("/admin/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login_page.text).group(1)
    response = client.post(
        "/admin/login/?next=/admin/",
        data={"csrfmiddlewaretoken": token, "username": "root", "password": PASSWORD},
        headers={"Referer": base_url + "/admin/login/"},
    )
    assert response.status_code == 302, response.text[:500]
    return client


def _pid_alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.fixture
def web(tmp_path):
    server = make_server(tmp_path)
    config = {"command": sys.executable, "args": [str(DEMO_SERVER)]}
    server.create_users()  # root among them
    server.insert(MCPServer, name="demo", **config)
    server.start()
    yield server
    server.stop()


def test_daphne_connects_stored_servers_and_closes_them_on_exit(web):
    client = _admin_client(web.url)
    deadline = time.monotonic() + WAIT
    page = ""
    while time.monotonic() < deadline:
        page = client.get("/admin/tools_app/mcpserver/").text
        if 'field-state">ready' in page:
            break
        time.sleep(0.1)
    assert 'field-state">ready' in page, web.log()[-2000:]
    children = descendant_pids(web.proc.pid)
    assert children, "the demo server should run as a child of daphne"

    web.stop()
    assert web.proc.returncode is not None
    assert not [pid for pid in children if _pid_alive(pid)], web.log()[-2000:]
