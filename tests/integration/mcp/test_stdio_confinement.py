"""Stdio MCP servers run confined: a real server (the demo server) starts, lists and calls
under bubblewrap, in its own folder, without the data directory or the network, and dies
with the process that spawned it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from openprogram import config
from openprogram.mcp import MCPConfigError, MCPManager, parse_mcp_servers_json
from openprogram.mcp.stdio_confinement import MCP_SERVER_LIMITS
from openprogram.security.sandbox import sandbox_problem

from .conftest import WAIT, demo_config, descendant_pids, is_failed, is_ready, process_alive

PROBES = {"DEMO_PROBE_TOOLS": "1"}


async def _call(manager: MCPManager, server: str, tool: str, **args: object) -> str:
    result = await manager.call(server, tool, args)
    assert not result.is_error, result
    return result.content[0].text


def _start(manager: MCPManager, name: str = "boxed", **overrides: object) -> None:
    manager.add(demo_config(name, env=PROBES, **overrides))
    manager.wait_for(name, lambda s: is_ready(s) or is_failed(s), timeout=WAIT)
    assert is_ready(manager.status(name)), manager.status(name)


async def test_it_starts_lists_and_calls_in_its_own_folder(home, manager):
    _start(manager)
    assert "mcp__boxed__echo" in manager.status("boxed")["tools"]
    assert await _call(manager, "boxed", "echo", text="hi") == "hi"
    folder = home / "mcp" / "boxed"
    assert json.loads(await _call(manager, "boxed", "where")) == {
        "cwd": str(folder),
        "home": str(folder),
    }
    written = await _call(manager, "boxed", "write_here", name="note.txt", text="kept")
    assert written == str(folder / "note.txt")
    assert (folder / "note.txt").read_text() == "kept"


async def test_it_cannot_read_the_data_directory(home, manager):
    _start(manager)
    _start(manager, "open", confined=False)
    secret = str(home / "secret_key")
    # The same tool of an unconfined server reads it: the probe can fail.
    assert await _call(manager, "open", "read_path", path=secret) == "READ:s3cr3t-key"
    seen = await _call(manager, "boxed", "read_path", path=secret)
    assert seen.startswith("FileNotFoundError"), seen
    seen = await _call(manager, "boxed", "read_path", path="/etc/shadow")
    assert seen.startswith("FileNotFoundError"), seen


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP listener on the host's loopback."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server.getsockname()[1]


async def test_it_cannot_reach_the_network_unless_allowed(home, manager, listener):
    _start(manager)
    seen = await _call(manager, "boxed", "connect", port=listener)
    assert seen != "REACHED" and "Error" in seen, seen
    _start(manager, "online", network=True)
    assert await _call(manager, "online", "connect", port=listener) == "REACHED"


def test_the_limits_spare_an_idle_server():
    """CPU time is cumulative: an hour of it, never wall-clock time."""
    assert MCP_SERVER_LIMITS.cpu_seconds == 3600
    assert MCP_SERVER_LIMITS.memory_bytes == 1 << 30
    # Room for V8's WebAssembly reservations (~10 GiB each): Node's fetch needs one.
    assert MCP_SERVER_LIMITS.address_space_bytes == 64 << 30


def test_a_confined_server_never_starts_unconfined_without_a_sandbox(home, manager):
    config.configure(home=home, bwrap="no-such-bwrap")
    sandbox_problem.cache_clear()
    manager.add(demo_config("boxed", env=PROBES))
    manager.wait_for("boxed", is_failed, timeout=WAIT)
    assert "bubblewrap" in manager.status("boxed")["error"]


_OWNER = """
import sys, time
from openprogram.config import configure
configure(home=sys.argv[1])
from openprogram.mcp import MCPManager, MCPServerConfig
manager = MCPManager()
manager.add(MCPServerConfig(name="boxed", command=sys.executable, args=[sys.argv[2]], timeout=30))
manager.wait_for("boxed", lambda s: s["state"] in ("ready", "failed"), timeout=60)
print(manager.status("boxed")["state"], flush=True)
time.sleep(600)
"""


def test_it_dies_with_the_process_that_owns_the_manager(home):
    from .conftest import DEMO_SERVER

    owner = subprocess.Popen(
        [sys.executable, "-c", _OWNER, str(home), str(DEMO_SERVER)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[3],
    )
    try:
        assert owner.stdout.readline().strip() == "ready"
        children = descendant_pids(owner.pid)
        servers = [
            pid
            for pid in children
            if b"demo_server.py" in Path(f"/proc/{pid}/cmdline").read_bytes()
        ]
        assert servers, children
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait(timeout=WAIT)
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline and any(process_alive(pid) for pid in children):
            time.sleep(0.05)
        assert not [pid for pid in children if process_alive(pid)]
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()


def test_the_json_config_takes_both_switches():
    (plain, opened) = parse_mcp_servers_json(
        {
            "mcpServers": {
                "plain": {"command": "srv"},
                "opened": {"command": "srv", "confined": False, "network": True},
            }
        }
    )
    assert (plain.confined, plain.network) == (True, False)
    assert (opened.confined, opened.network) == (False, True)
    assert plain.connection_key() != opened.connection_key()
    with pytest.raises(MCPConfigError, match="confined must be true or false"):
        parse_mcp_servers_json({"mcpServers": {"x": {"command": "srv", "confined": "no"}}})
