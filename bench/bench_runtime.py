"""Tool runtime costs: execute() overhead, registration speed, bounded streaming memory."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable

from bench._stream_memory import stream_traced_peak
from bench._util import print_table
from openprogram.programs.decorator import build_function_tool, function
from openprogram.programs.registry import restore_registry, snapshot_registry

__all__ = ["main"]

_CALLS_PER_ROUND = 2_000
_ROUNDS = 7


def _noop_sync() -> str:
    """Do nothing."""
    return "ok"


async def _noop_async() -> str:
    """Do nothing, asynchronously."""
    return "ok"


async def _median_us(call: Callable[[], Awaitable[object]] | Callable[[], object]) -> float:
    samples = []
    for _ in range(_ROUNDS):
        start = time.perf_counter()
        for _ in range(_CALLS_PER_ROUND):
            outcome = call()
            if asyncio.iscoroutine(outcome):
                await outcome
        samples.append((time.perf_counter() - start) / _CALLS_PER_ROUND * 1e6)
    return statistics.median(samples)


async def _execute_overhead() -> list[list[object]]:
    rows: list[list[object]] = []
    for label, fn in (("no-op sync tool", _noop_sync), ("no-op async tool", _noop_async)):
        tool = build_function_tool(fn)
        direct = await _median_us(fn)
        through_tool = await _median_us(lambda tool=tool: tool.execute("bench", {}))
        rows.append(
            [
                f"AgentTool.execute, {label}",
                f"{through_tool:.1f} µs",
                f"direct call {direct:.2f} µs; overhead {through_tool - direct:.1f} µs",
            ]
        )
    return rows


def _registration_ms(count: int = 1_000) -> float:
    snapshot = snapshot_registry()
    try:
        start = time.perf_counter()
        for i in range(count):

            def tool(query: str, limit: int = 5) -> str:
                """Search something.

                Args:
                    query: what to look for
                    limit: how many results
                """
                return query

            function(name=f"bench_tool_{i}")(tool)
        return (time.perf_counter() - start) * 1000
    finally:
        restore_registry(snapshot)


async def _streaming_peak(*, with_consumer: bool) -> list[object]:
    memory = await stream_traced_peak(with_consumer=with_consumer)
    label = "with an on_update consumer" if with_consumer else "no consumer"
    return [
        f"peak memory streaming 100 MB, capacity 1 MB ({label})",
        f"{memory.peak_bytes / 1024 / 1024:.2f} MB",
        f"{memory.capacity_ratio:.2f}× capacity (must be < 2×)",
    ]


async def _run() -> list[list[object]]:
    rows = await _execute_overhead()
    rows.append(["register 1,000 decorated functions", f"{_registration_ms():.0f} ms", ""])
    rows.append(await _streaming_peak(with_consumer=False))
    rows.append(await _streaming_peak(with_consumer=True))
    return rows


def main() -> None:
    print_table("Tool runtime", ["measure", "value", "notes"], asyncio.run(_run()))


if __name__ == "__main__":
    main()
