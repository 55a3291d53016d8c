"""The demo server over streamable HTTP on loopback passes the same basic checks."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from openprogram.mcp import Backoff, MCPManager, MCPServerConfig
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


class _HttpDemo:
    """The demo server in streamable-HTTP mode on a fixed loopback port, restartable."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(DEMO_SERVER), "--http", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait_for_port(self.port, self.proc)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(WAIT)


@pytest.fixture
def http_demo() -> Iterator[_HttpDemo]:
    demo = _HttpDemo()
    demo.start()
    try:
        yield demo
    finally:
        demo.stop()


@pytest.fixture
def http_server(http_demo) -> str:
    return http_demo.url


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


def test_a_vanished_server_is_noticed_and_reconnected_when_it_returns(clean_registry, http_demo):
    # A short health interval: no stream ends when an HTTP server dies.
    manager = MCPManager(backoff=Backoff(0.1, 0.3), health_interval=0.2)
    try:
        manager.add(MCPServerConfig(name="web", transport="http", url=http_demo.url, timeout=5))
        manager.wait_for("web", is_ready, timeout=WAIT)
        http_demo.stop()
        status = manager.wait_for("web", is_failed, timeout=WAIT)
        assert "mcp__web__echo" in status["tools"]
        assert registry.get("mcp__web__echo").unavailable_reason.startswith(
            "MCP server 'web' is failed: "
        )
        http_demo.start()
        manager.wait_for("web", is_ready, timeout=WAIT)
        result = asyncio.run(registry.get("mcp__web__echo").execute("h5", {"text": "again"}))
        assert result.content == "again"
    finally:
        manager.shutdown()
