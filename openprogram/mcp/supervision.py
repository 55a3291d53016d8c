"""How a server's connection is supervised: the states it reports and its retry delays.

Kept apart from :mod:`openprogram.mcp.connection` (which imports the MCP SDK) so the
manager and the per-user accounts can be built, and report "no server", without it.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["Backoff", "ServerState"]

ServerState = Literal["connecting", "ready", "failed", "stopped"]


class Backoff:
    """Exponential retry delays: ``initial``, doubled per consecutive failure, capped."""

    def __init__(self, initial: float = 1.0, maximum: float = 60.0) -> None:
        if initial <= 0 or maximum < initial:
            raise ValueError(f"need 0 < initial <= maximum, got {initial!r}, {maximum!r}")
        self.initial = initial
        self.maximum = maximum

    def delay(self, failures: int) -> float:
        return min(self.maximum, self.initial * 2 ** max(0, failures - 1))
