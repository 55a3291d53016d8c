"""Real MCP servers for the integration tests: the demo server and mcp-server-time."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openprogram.mcp import Backoff, MCPManager, MCPServerConfig

DEMO_SERVER = Path(__file__).parent / "servers" / "demo_server.py"
TIME_SERVER = Path(sys.executable).with_name("mcp-server-time")
WAIT = 20.0
"""Upper bound for a condition to hold; a healthy run meets it in about a second."""


def demo_config(name: str = "demo", **overrides: Any) -> MCPServerConfig:
    settings: dict[str, Any] = {
        "command": sys.executable,
        "args": [str(DEMO_SERVER)],
        "timeout": 10.0,
    }
    settings.update(overrides)
    return MCPServerConfig(name=name, **settings)


def is_ready(status: dict[str, Any]) -> bool:
    return status["state"] == "ready"


def is_failed(status: dict[str, Any]) -> bool:
    return status["state"] == "failed"


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
