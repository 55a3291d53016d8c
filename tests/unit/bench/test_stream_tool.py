"""The streaming bench's tool: every update carries the time it was emitted."""

from __future__ import annotations

import time

from bench._stream_tool import bench_stream
from bench._ws import STAMP_PREFIX
from openprogram.programs.registry import get


async def test_each_update_carries_a_nanosecond_stamp_taken_when_it_was_sent(clean_registry):
    from openprogram.programs.decorator import build_function_tool

    tool = get("bench_stream") or build_function_tool(bench_stream)
    updates: list[str] = []
    before = time.time_ns()
    result = await tool.execute("c1", {"chunks": 3, "gap_ms": 0}, on_update=updates.append)
    after = time.time_ns()
    assert not result.is_error, result.content
    stamps = [
        int(line.removeprefix(STAMP_PREFIX))
        for line in "".join(updates).splitlines()
        if line.startswith(STAMP_PREFIX)
    ]
    assert len(stamps) == 3
    assert before <= stamps[0] <= stamps[-1] <= after
