"""100 MB through on_update stays within twice the 1 MB stream capacity."""

from __future__ import annotations

from bench._stream_memory import STREAM_TOTAL_CHARS, stream_traced_peak


async def test_it_streams_100_mb_with_a_consumer_under_twice_the_capacity():
    memory = await stream_traced_peak(with_consumer=True)
    assert memory.streamed_chars == STREAM_TOTAL_CHARS
    assert memory.capacity_ratio < 2


async def test_it_streams_100_mb_without_a_consumer_under_twice_the_capacity():
    memory = await stream_traced_peak(with_consumer=False)
    assert memory.capacity_ratio < 2
