"""The streaming load's table: one column for the turn alone, one per load."""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from bench._proc import BENCH_CLIENTS, MACHINE, CpuWindow
from bench._streaming_turns import Turns
from bench._ws import percentile

__all__ = ["MODEL_SERVER", "SERVER", "Alone", "Load", "rows"]

SERVER, MODEL_SERVER = "server", "model server"
"""The labels of the daphne process and the fake model server in a load's :class:`CpuWindow`."""
_MIB = 1024 * 1024
_CORES = os.cpu_count() or 1


@dataclass
class Alone:
    """The baseline: the same turn, run alone a few times."""

    turns: Turns
    count: int
    cpu: CpuWindow
    rss: int


@dataclass
class Load:
    """One load: its turns, its newcomers, and what it cost whom."""

    pattern: str
    turns: Turns
    newcomers: Turns
    span: CpuWindow
    """From the first send until the load's last turn ended: its shares of a core."""
    cpu: CpuWindow
    """From the first send until the newcomers ended too: all the CPU, for per-turn figures."""
    start_cpu: float | None
    """Server CPU seconds from the first send until every load turn had its first token."""
    pieces_by_then: int
    rss_peak: int


def _p(values: list[float], q: int) -> str:
    return f"{percentile(values, q):.0f}" if len(values) >= 2 else "n/a"


def _ttft(values: list[float], alone_ms: float) -> str:
    if len(values) < 2:
        return "n/a"
    p50, p95 = statistics.median(values), percentile(values, 95)
    times = f" ({p95 / alone_ms:.1f}× alone)" if alone_ms else ""
    return f"{p50:.0f} / {p95:.0f}{times}"


def _per_frame(turns: Turns) -> str:
    return f"{turns.pieces / turns.text_frames:.2f}" if turns.text_frames else "n/a"


def _share(span: CpuWindow, cpu: CpuWindow, label: str, turns: int) -> str:
    return (
        f"{100 * span.share(label):.0f} % ({cpu.used[label]:.2f} s, "
        f"{cpu.used[label] * 1000 / turns:.1f} ms a turn)"
    )


def rows(
    alone: Alone, loads: list[Load], *, chats: int, late: int, pieces_per_turn: int
) -> list[list[str]]:
    """The table's rows: measure, the turn alone, each load, the issue's target."""
    alone_ms = statistics.median(alone.turns.first_token_ms) if alone.turns.first_token_ms else 0.0
    per_load = chats + late

    def row(measure: str, lone: str, each: Callable[[Load], str], target: str = "") -> list[str]:
        return [measure, lone, *(each(load) for load in loads), target]

    def start_cost(x: Load) -> str:
        if x.start_cpu is None:
            return "n/a (a turn never streamed)"
        return (
            f"{x.start_cpu * 1000 / chats:.2f} ({x.start_cpu:.3f} s; "
            f"{x.pieces_by_then} pieces streamed meanwhile)"
        )

    lone = alone.turns
    return [
        row(
            "turns completed",
            f"{lone.completed} of {alone.count}",
            lambda x: (
                f"{x.turns.completed} of {chats} + {x.newcomers.completed} of {late} newcomers"
            ),
            "all",
        ),
        row(
            "text pieces delivered",
            f"{lone.pieces} of {alone.count * pieces_per_turn}",
            lambda x: f"{x.turns.pieces + x.newcomers.pieces} of {per_load * pieces_per_turn}",
            "all",
        ),
        row(
            "time to first token p50 / p95 (ms): the load's turns",
            _ttft(lone.first_token_ms, alone_ms),
            lambda x: _ttft(x.turns.first_token_ms, alone_ms),
            "p95 ≤ 2× alone",
        ),
        row(
            f"time to first token p50 / p95 (ms): {late} newcomers, one by one mid-load",
            "",
            lambda x: _ttft(x.newcomers.first_token_ms, alone_ms),
            "p95 ≤ 2× alone",
        ),
        row(
            "added latency per piece p50 / p99 (ms)",
            f"{_p(lone.piece_latency_ms, 50)} / {_p(lone.piece_latency_ms, 99)}",
            lambda x: f"{_p(x.turns.piece_latency_ms, 50)} / {_p(x.turns.piece_latency_ms, 99)}",
            "p99 ≤ 50",
        ),
        row(
            "pieces per text frame (merged while they waited in the relay's window)",
            _per_frame(lone),
            lambda x: _per_frame(x.turns),
        ),
        row(
            "server CPU from the first send until every turn streamed (ms per turn start)",
            "",
            start_cost,
        ),
        row(
            "server CPU per turn (ms), newcomers included",
            f"{alone.cpu.used[SERVER] * 1000 / alone.count:.0f}",
            lambda x: f"{x.cpu.used[SERVER] * 1000 / per_load:.0f}",
        ),
        row(
            "server CPU while the load's turns ran (% of one core)",
            f"{100 * alone.cpu.share(SERVER):.0f} %",
            lambda x: f"{100 * x.span.share(SERVER):.0f} % over {x.span.wall:.1f} s",
            "≤ 50 %",
        ),
        row(
            "rig: fake model server CPU (% of one core; s, ms a turn)",
            _share(alone.cpu, alone.cpu, MODEL_SERVER, alone.count),
            lambda x: _share(x.span, x.cpu, MODEL_SERVER, per_load),
        ),
        row(
            "rig: bench clients CPU (% of one core; s, ms a turn)",
            _share(alone.cpu, alone.cpu, BENCH_CLIENTS, alone.count),
            lambda x: _share(x.span, x.cpu, BENCH_CLIENTS, per_load),
        ),
        row(
            f"machine: every process, anyone's (% of one core, of {100 * _CORES} %)",
            f"{100 * alone.cpu.share(MACHINE):.0f} %",
            lambda x: f"{100 * x.span.share(MACHINE):.0f} %",
        ),
        row(
            "server resident memory (MiB)",
            f"{alone.rss / _MIB:.0f}",
            lambda x: f"peak {x.rss_peak / _MIB:.0f}",
        ),
    ]
