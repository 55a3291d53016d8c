"""MCP: time to a registered tool surface, and what the loop-thread bridge costs per call.

Real stdio servers (the integration tests' demo server). "direct SDK" is the
SDK client called on the caller's own loop, the floor any MCP call pays;
"MCPTool.execute" adds schema validation, the hop to the manager's loop
thread and back, result conversion and capping.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path

from bench._util import print_table

_DEMO = Path(__file__).resolve().parent.parent / "tests/integration/mcp/servers/demo_server.py"
_CALLS = 300


def _ready_seconds(extra_tools: int) -> tuple[float, int, float]:
    from openprogram.mcp import MCPManager, MCPServerConfig
    from openprogram.programs.registry import restore_registry, snapshot_registry

    snapshot = snapshot_registry()
    manager = MCPManager()
    try:
        started = time.perf_counter()
        manager.add(
            MCPServerConfig(
                name="bench",
                command=sys.executable,
                args=[str(_DEMO)],
                env={"DEMO_EXTRA_TOOLS": str(extra_tools)},
                timeout=60,
            )
        )
        status = manager.wait_for("bench", lambda s: s["state"] == "ready", timeout=60)
        elapsed = time.perf_counter() - started
        from openprogram.programs.deferred import deferred_catalog_text

        tools = [t for t in snapshot_registry().tools.values() if t.server == "bench"]
        catalog_started = time.perf_counter()
        deferred_catalog_text(tools)
        catalog = time.perf_counter() - catalog_started
        return elapsed, len(status["tools"]), catalog
    finally:
        manager.shutdown()
        restore_registry(snapshot)


async def _direct_latencies() -> list[float]:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=[str(_DEMO)])
    async with Client(params, mode="legacy", cache=None) as client:
        samples = []
        for i in range(_CALLS):
            started = time.perf_counter()
            await client.call_tool("add", {"a": i, "b": 1})
            samples.append(time.perf_counter() - started)
        return samples


async def _bridged_latencies() -> list[float]:
    from openprogram.mcp import MCPManager, MCPServerConfig
    from openprogram.programs import registry
    from openprogram.programs.registry import restore_registry, snapshot_registry

    snapshot = snapshot_registry()
    manager = MCPManager()
    try:
        manager.add(MCPServerConfig(name="bench", command=sys.executable, args=[str(_DEMO)]))
        await asyncio.to_thread(
            manager.wait_for, "bench", lambda s: s["state"] == "ready", timeout=60
        )
        tool = registry.get("mcp__bench__add")
        samples = []
        for i in range(_CALLS):
            started = time.perf_counter()
            await tool.execute(f"b{i}", {"a": i, "b": 1})
            samples.append(time.perf_counter() - started)
        return samples
    finally:
        await asyncio.to_thread(manager.shutdown)
        restore_registry(snapshot)


def _ms(samples: list[float], quantile: float) -> str:
    ordered = sorted(samples)
    return f"{ordered[int(quantile * (len(ordered) - 1))] * 1000:.2f}"


def main() -> None:
    rows = []
    for extra in (0, 500):
        seconds, count, catalog = _ready_seconds(extra)
        rows.append([count, f"{seconds:.2f}", f"{catalog * 1000:.1f}"])
    print_table(
        "MCP: start to registered tools (stdio demo server)",
        ["tools", "start → ready (s)", "deferred catalog text (ms)"],
        rows,
    )
    direct = asyncio.run(_direct_latencies())
    bridged = asyncio.run(_bridged_latencies())
    print_table(
        f"MCP: per-call latency, {_CALLS} sequential calls of a trivial tool",
        ["path", "median (ms)", "p95 (ms)", "mean (ms)"],
        [
            [
                "direct SDK call_tool",
                _ms(direct, 0.5),
                _ms(direct, 0.95),
                f"{statistics.mean(direct) * 1000:.2f}",
            ],
            [
                "MCPTool.execute (bridged)",
                _ms(bridged, 0.5),
                _ms(bridged, 0.95),
                f"{statistics.mean(bridged) * 1000:.2f}",
            ],
        ],
    )


if __name__ == "__main__":
    main()
