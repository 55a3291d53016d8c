"""Helpers shared by the benchmarks: timing medians and printing tables."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence

__all__ = ["median_seconds", "print_table", "ratio"]


def median_seconds(fn: Callable[[], object], *, repeat: int = 7, number: int = 1) -> float:
    """Median wall time of ``number`` calls of ``fn``, over ``repeat`` rounds, per call."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples)


def ratio(value: float, baseline: float) -> str:
    return f"{value / baseline:.2f}×" if baseline else "n/a"


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Print (and return) a Markdown table, so docs/benchmarks.md can quote it as is."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [
        max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)
    ]
    lines = [f"### {title}", ""]
    lines.append("| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |")
    lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in cells:
        lines.append("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |")
    text = "\n".join(lines) + "\n"
    print(text, flush=True)
    return text
