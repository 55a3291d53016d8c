"""Resolution and the catalog grow linearly with the registry (CPU time, so load cannot flake it)."""

from __future__ import annotations

import time

from openprogram.programs import registry
from openprogram.programs.deferred import deferred_catalog_text
from openprogram.programs.policy import resolve_tools

from .conftest import EchoTool


def _best_cpu_seconds(fn, rounds: int = 7) -> float:
    samples = []
    for _ in range(rounds):
        started = time.thread_time()
        fn()
        samples.append(time.thread_time() - started)
    return min(samples)


def _register(size: int) -> list[str]:
    registry.reset_registry()
    names = [f"mcp__s{i % 7}__tool_{i}" for i in range(size)]
    for i, name in enumerate(names):
        registry.register(
            EchoTool(name=name, description="Does a thing.", defer=i % 2 == 0, source="mcp")
        )
    return names


def _resolution_cost(size: int) -> float:
    names = _register(size)
    arguments = {
        "profile": names[: size * 3 // 4],
        "deny": names[::10],
        "disabled": set(names[3::20]),
        "only_available": True,
    }
    return _best_cpu_seconds(lambda: resolve_tools(**arguments))


def test_resolution_cost_grows_no_faster_than_linearly():
    small, large = _resolution_cost(1_000), _resolution_cost(10_000)
    # Linear is 10x; cache effects allow some more, a quadratic step would be ~100x.
    assert large < 0.02, f"10,000 tools took {large * 1000:.1f} ms of CPU"
    assert large / max(small, 1e-5) < 40


def test_the_catalog_of_ten_thousand_deferred_tools_stays_within_budget_and_fast():
    _register(10_000)
    tools = resolve_tools().tools
    cost = _best_cpu_seconds(lambda: deferred_catalog_text(tools), rounds=3)
    assert len(deferred_catalog_text(tools)) <= 6_000
    assert cost < 0.1, f"catalog took {cost * 1000:.1f} ms of CPU"
