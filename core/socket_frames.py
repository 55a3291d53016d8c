"""The error frame and close code of a WebSocket frame over the size limit.

Shared by the chat consumer (its own 64 KB limit) and ``openprogram_site.daphne_patches``
(daphne's 1 MB limit), so a client sees the same frame and code from either.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CLOSE_TOO_LARGE", "too_large_frame"]

CLOSE_TOO_LARGE = 4413
"""A frame over the size limit (the consumer's 64 KB or daphne's 1 MB), as HTTP's 413."""


def too_large_frame(*, size: int, limit: int) -> dict[str, Any]:
    """The error frame sent before closing a socket that sent an oversize frame."""
    return {
        "type": "error",
        "kind": "too_large",
        "message": f"a frame of {size} bytes is over the {limit}-byte limit; "
        "the connection closes (code 4413)",
    }
