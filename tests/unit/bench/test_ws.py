"""The bench WebSocket helpers: percentiles over latency samples."""

from __future__ import annotations

import pytest

from bench._ws import percentile


def test_it_interpolates_the_median_of_an_odd_sample():
    assert percentile([5.0, 1.0, 3.0, 2.0, 4.0], 50) == 3.0


def test_it_puts_the_99th_percentile_near_the_largest_sample():
    samples = [float(i) for i in range(1, 101)]
    assert 99.0 <= percentile(samples, 99) < 100.0


def test_it_refuses_a_single_sample():
    with pytest.raises(ValueError, match="at least 2 samples"):
        percentile([1.0], 50)
