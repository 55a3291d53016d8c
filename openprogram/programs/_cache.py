"""Per-tool memo of successful results, keyed on (tool name, canonical arguments)."""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from typing import Any

from openprogram.agent.types import AgentToolResult

__all__ = ["ResultCache", "canonical_arguments"]

DEFAULT_MAX_ENTRIES = 256
"""Bounded so ``cache_ttl=None`` ("until the process ends") cannot grow forever."""


def canonical_arguments(args: dict[str, Any]) -> str:
    """One spelling per argument set: sorted keys, no whitespace."""
    return json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


class ResultCache:
    """A thread-safe LRU with an optional time-to-live. Callers store successes only."""

    def __init__(self, *, ttl: float | None, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self.ttl = ttl
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[str, str], tuple[float, AgentToolResult]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: tuple[str, str]) -> AgentToolResult | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            stored_at, result = entry
            if self.ttl is not None and time.monotonic() - stored_at >= self.ttl:
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return result

    def put(self, key: tuple[str, str], result: AgentToolResult) -> None:
        with self._lock:
            self._entries[key] = (time.monotonic(), result)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
