"""Real MCP servers for the integration tests: the demo server and mcp-server-time."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from openprogram import config
from openprogram.mcp import Backoff, MCPManager, MCPServerConfig, get_mcp_accounts
from openprogram.security.sandbox import sandbox_problem
from tests.fakes.oauth_launch import OAuthDemo, oauth_demo

if TYPE_CHECKING:
    from tools_app.mcp.models import MCPServer

DEMO_SERVER = Path(__file__).parent / "servers" / "demo_server.py"
PROTOCOL_SERVER = Path(__file__).parent / "servers" / "protocol_server.py"
TIME_SERVER = Path(sys.executable).with_name("mcp-server-time")
MODERN = "2026-07-28"
"""The protocol revision the installed SDK speaks (and our client asks for first)."""
LEGACY = "2025-11-25"
"""The newest revision of the initialize handshake: what servers before 2026 speak."""
WAIT = 60.0
"""Upper bound for a condition to hold; a healthy run meets it in about a second, a loaded
2-core CI machine in several (waiting costs nothing when the condition comes early)."""
SERVER_TIMEOUT = 30.0
"""The test servers' connect/list/call timeout: starting a Python MCP server (interpreter
and SDK imports) takes a second here and may take ten on a loaded machine."""


def demo_config(name: str = "demo", **overrides: Any) -> MCPServerConfig:
    settings: dict[str, Any] = {
        "command": sys.executable,
        "args": [str(DEMO_SERVER)],
        "timeout": SERVER_TIMEOUT,
        # The test servers' tools carry no annotations, which the spec reads as
        # destructive (ask first); tests not about approval run them as a trusted server.
        "destructive_without_approval": True,
    }
    settings.update(overrides)
    return MCPServerConfig(name=name, **settings)


def protocol_config(**overrides: Any) -> MCPServerConfig:
    """The protocol-features server (elicitation, structured output, prompts, resources)."""
    settings: dict[str, Any] = {
        "command": sys.executable,
        "args": [str(PROTOCOL_SERVER)],
        "timeout": SERVER_TIMEOUT,
        "destructive_without_approval": True,  # as demo_config
    }
    settings.update(overrides)
    return MCPServerConfig(name="proto", **settings)


def is_ready(status: dict[str, Any]) -> bool:
    return status["state"] == "ready"


def is_failed(status: dict[str, Any]) -> bool:
    return status["state"] == "failed"


def process_alive(pid: int) -> bool:
    """Is ``pid`` a live process (not gone, not a zombie)? Read from /proc."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def descendant_pids(root: int | None = None) -> set[int]:
    """Every live process below ``root`` (default: this test process), read from /proc."""
    root = os.getpid() if root is None else root
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # Field 4 is the parent pid; the command name (field 2) may contain spaces.
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] == "Z":
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    found: set[int] = set()
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


@pytest.fixture
def manager(clean_registry) -> Iterator[MCPManager]:
    """A manager of its own with test-sized backoff; shut down (children reaped) afterwards."""
    own = MCPManager(backoff=Backoff(initial=0.05, maximum=0.4))
    yield own
    own.shutdown()


@pytest.fixture(scope="module")
def proto(request, tmp_path_factory) -> Iterator[MCPManager]:
    """One protocol server for a module; ``proto.marker_dir`` is where it leaves markers.

    Parametrize indirectly with a protocol revision (``"2025-11-25"`` makes it an older
    server without ``server/discover``); the default is the SDK's own, 2026-07-28.
    """
    from openprogram.programs.registry import restore_registry, snapshot_registry

    snapshot = snapshot_registry()
    marker_dir = tmp_path_factory.mktemp("proto-markers")
    own = MCPManager(backoff=Backoff(initial=0.05, maximum=0.4))
    own.marker_dir = marker_dir  # type: ignore[attr-defined]
    own.revision = getattr(request, "param", MODERN)  # type: ignore[attr-defined]
    own.server_env = {  # type: ignore[attr-defined]
        "PROTOCOL_MARKER_DIR": str(marker_dir),
        "PROTOCOL_REVISION": own.revision,  # type: ignore[attr-defined]
    }
    try:
        # Unconfined: it leaves markers in a host folder the test reads (confinement is
        # test_stdio_confinement.py's subject).
        own.add(protocol_config(env=own.server_env, confined=False))  # type: ignore[attr-defined]
        own.wait_for("proto", is_ready, timeout=WAIT)
        yield own
    finally:
        own.shutdown()
        restore_registry(snapshot)


@pytest.fixture
def oauth_provider(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[OAuthDemo]:
    """The OAuth-protected demo MCP server; a test may pass its options (indirect parametrize)."""
    with oauth_demo(tmp_path, *getattr(request, "param", ())) as running:
        yield running


@pytest.fixture
def notes(clean_registry, oauth_provider: OAuthDemo) -> Iterator[MCPServer]:
    """The app's per-user server row "notes" for ``oauth_provider``, with the MCP side started."""
    from tools_app.mcp.models import MCPServer
    from tools_app.mcp.services import mcp_servers_start, mcp_servers_stop

    row = MCPServer.objects.create(
        name="notes",
        transport="http",
        url=oauth_provider.url,
        per_user_auth=True,
        timeout_seconds=10,
    )
    mcp_servers_start()
    deadline = time.monotonic() + WAIT
    while "notes" not in get_mcp_accounts().names():
        assert time.monotonic() < deadline, "the per-user server did not start"
        time.sleep(0.05)
    yield row
    mcp_servers_stop()


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    """A data directory with a secret in it, configured for the test (the confinement
    tests check a confined server cannot read it)."""
    data = tmp_path / "home"
    data.mkdir()
    (data / "secret_key").write_text("s3cr3t-key")
    previous = config._config
    config.configure(home=data)
    sandbox_problem.cache_clear()
    yield data
    config._config = previous
    sandbox_problem.cache_clear()
