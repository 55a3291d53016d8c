"""How the streaming load's turns arrive, and what their clients saw.

Arrival patterns: ``burst`` (every client sends in the same instant, the worst case) and
``spread`` (the sends at random moments over a window, as independent users arrive: a
Poisson process with that many arrivals in the window). Newcomers: while the load
streams, a few more turns start one by one; their time to first token is what a person
opening a chat on a busy server waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from bench._ws import ChatSeat, StartLine, TurnIncomplete, TurnRecord
from tests.fakes.openai_server import STAMP_PREFIX

__all__ = ["ARRIVALS", "FirstTokens", "NewcomerGate", "Turns", "arrival_offsets"]

ARRIVALS = ("burst", "spread")


def arrival_offsets(pattern: str, count: int, *, window: float, seed: int = 20) -> list[float]:
    """Seconds after the start line at which each of ``count`` clients sends."""
    if pattern == "burst":
        return [0.0] * count
    if pattern == "spread":
        # ``count`` uniform random moments in the window: a Poisson process given its count.
        rng = random.Random(seed)
        return sorted(rng.uniform(0.0, window) for _ in range(count))
    raise ValueError(f"unknown arrival pattern {pattern!r}: use one of {', '.join(ARRIVALS)}")


class FirstTokens:
    """Counts the load's first tokens; when the last one arrives, notes when and calls back."""

    def __init__(self, count: int, on_all: Callable[[], None]) -> None:
        self._waiting = count
        self._on_all = on_all
        self.all_streaming = asyncio.Event()
        self.at_ns = 0
        """``time.time_ns()`` when every load turn had its first token (0: never)."""

    def arrived(self) -> None:
        self._waiting -= 1
        if self._waiting == 0:
            self.at_ns = time.time_ns()
            self._on_all()
            self.all_streaming.set()


class NewcomerGate:
    """A newcomer connects with the load, then starts ``after`` seconds into its streaming.

    It counts on the load's start line (so the load does not start before it is
    connected) and sends once every load turn has streamed its first token, ``after``
    seconds later; if some never do (a failed turn), ``give_up`` seconds after the start.
    """

    def __init__(
        self, start: StartLine, tokens: FirstTokens, *, after: float, give_up: float = 60.0
    ) -> None:
        self._start, self._tokens = start, tokens
        self._after, self._give_up = after, give_up

    def arrive(self) -> None:
        self._start.arrive()

    async def wait(self) -> None:
        await self._start.wait()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._tokens.all_streaming.wait(), self._give_up)
        await asyncio.sleep(self._after)


@dataclass
class Turns:
    """What the clients saw of a set of turns."""

    label: str
    tools_per_turn: int
    completed: int = 0
    pieces: int = 0
    first_token_ms: list[float] = field(default_factory=list)
    piece_latency_ms: list[float] = field(default_factory=list)
    text_frames: int = 0
    """Text frames that carried the pieces (pieces / frames: how many a frame merged)."""
    arrivals_ns: list[int] = field(default_factory=list)
    """When each delivered piece reached its socket."""
    failures: list[str] = field(default_factory=list)

    def add(self, seat: ChatSeat, outcome: TurnRecord | BaseException) -> None:
        if not isinstance(outcome, TurnRecord):
            story = outcome.describe() if isinstance(outcome, TurnIncomplete) else repr(outcome)
            self.failures.append(f"{self.label}: conversation {seat.conversation_id}: {story}")
            return
        finished = [f for f in outcome.frames if f.get("type") == "tool_finished"]
        if outcome.stop_reason == "completed" and len(finished) == self.tools_per_turn:
            self.completed += 1
        else:
            self.failures.append(
                f"{self.label}: conversation {seat.conversation_id}: ended "
                f"{outcome.stop_reason!r} with {len(finished)} of {self.tools_per_turn} tool "
                f"results, turn_finished {'seen' if outcome.finished_frame else 'never arrived'}"
            )
        first = True
        for frame, arrived_ns in zip(outcome.frames, outcome.received_ns, strict=True):
            if frame.get("type") != "text_delta":
                continue
            if first:
                self.first_token_ms.append((arrived_ns - outcome.sent_ns) / 1e6)
                first = False
            self.text_frames += 1
            for line in frame["text"].split():
                if line.startswith(STAMP_PREFIX):
                    self.pieces += 1
                    sent_ns = int(line.removeprefix(STAMP_PREFIX))
                    self.piece_latency_ms.append((arrived_ns - sent_ns) / 1e6)
                    self.arrivals_ns.append(arrived_ns)

    def pieces_before(self, at_ns: int) -> int:
        return sum(1 for arrived in self.arrivals_ns if arrived <= at_ns)
