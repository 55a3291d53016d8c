"""The demo server over streamable HTTP on loopback passes the same basic checks."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from openprogram.mcp import MCPServerConfig
from openprogram.programs import registry
from tests.servers import free_port

from .conftest import DEMO_SERVER, WAIT, is_failed, is_ready


def _wait_for_port(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the demo HTTP server exited with {proc.returncode}")
        with socket.socket() as probe:
            probe.settimeout(0.2)
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"the demo HTTP server did not listen on {port} within {WAIT}s")


@pytest.fixture
def http_server() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(DEMO_SERVER), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(WAIT)


@pytest.fixture
def web(manager, http_server):
    manager.add(MCPServerConfig(name="web", transport="http", url=http_server, timeout=10))
    manager.wait_for("web", is_ready, timeout=WAIT)
    return manager


def test_its_tools_register_deferred(web):
    status = web.status("web")
    assert {"mcp__web__echo", "mcp__web__add", "mcp__web__slow_count"} <= set(status["tools"])
    add = registry.get("mcp__web__add")
    assert add.defer
    assert add.server == "web"
    assert add.package == "mcp:web"


async def test_it_calls_tools_with_validation_errors_and_progress(web):
    assert (await registry.get("mcp__web__add").execute("h1", {"a": 20, "b": 22})).content == "42"
    invalid = await registry.get("mcp__web__add").execute("h2", {"a": 1})
    assert invalid.is_error
    assert "'b' is a required property" in invalid.content
    failed = await registry.get("mcp__web__fail").execute("h3", {"message": "over http"})
    assert failed.is_error
    assert "over http" in failed.content
    updates: list[str] = []
    counted = await registry.get("mcp__web__slow_count").execute(
        "h4", {"steps": 2, "delay": 0.01}, on_update=updates.append
    )
    assert counted.content == "counted to 2"
    assert updates == ["step 1 of 2", "step 2 of 2"]


def test_nothing_listening_is_a_failed_server(manager):
    url = f"http://127.0.0.1:{free_port()}/mcp"
    manager.add(MCPServerConfig(name="nobody", transport="http", url=url, timeout=5))
    status = manager.wait_for("nobody", is_failed, timeout=WAIT)
    assert status["error"]
