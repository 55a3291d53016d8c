"""What a tool returns, and how big it may be when it reaches the model.

Three of the spec's runtime knobs live here:

* the head+tail result cap (``max_result_chars``, ``head_ratio``) with a marker
  saying how much was dropped, and ``persist_full`` writing the whole text to
  the current user's results directory so nothing is lost;
* the dynamic ceiling: ``min(per-tool max, 0.3 * context window)`` read from
  :data:`_current_context_window_chars`, which the dispatcher installs per turn
  with :func:`set_context_window_chars`, so small-context models shrink results
  automatically;
* :class:`TailAccumulator`, the bounded buffer streamed ``on_update`` text goes
  through, so a tool that streams forever cannot grow memory without bound.

Persisted results are private to their user: each user has a directory
``<results_dir>/<user id>/`` (:func:`results_dir_for_user`), and the ``read``
tool only opens files in the directory of the user whose turn is running.
Outside a turn, or in a turn without a user, results go to
``<results_dir>/_local/``: the leading ``_`` can never start a user id
(user ids must start with a letter or digit), so no user can share it.
"""

from __future__ import annotations

import json
import os
import re
import threading
import uuid
from collections import deque
from contextvars import ContextVar, Token
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from openprogram.agent.context import get_turn
from openprogram.agent.types import AgentTool, AgentToolResult
from openprogram.config import get_config

__all__ = [
    "CONTEXT_SHARE",
    "LOCAL_RESULTS_DIRNAME",
    "CappedText",
    "TailAccumulator",
    "ToolReturn",
    "cap_result_text",
    "current_results_dir",
    "reset_context_window_chars",
    "results_dir_for_user",
    "set_context_window_chars",
]

CONTEXT_SHARE = 0.3
"""The largest share of the model's context window one tool result may take."""

_current_context_window_chars: ContextVar[int | None] = ContextVar(
    "openprogram_context_window_chars", default=None
)
_SAFE_FILE_PART = re.compile(r"[^A-Za-z0-9_.-]+")
_USER_COMPONENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}$")
LOCAL_RESULTS_DIRNAME = "_local"
"""Results persisted outside a turn (or by a turn without a user): no user id can be this."""


@dataclass
class ToolReturn:
    """A tool result with structured data beside the text the model reads.

    ``data`` becomes :attr:`AgentToolResult.details` (for the UI and run
    history, never sent to the model). ``persist=False`` skips writing the full
    text to disk when it is capped: the ``read`` tool uses it to page through a
    result that is already persisted instead of persisting it again.
    """

    text: str
    data: Any = None
    persist: bool = True


@dataclass
class CappedText:
    text: str
    truncated: bool = False
    dropped_chars: int = 0
    full_result_path: str | None = None


def set_context_window_chars(chars: int | None) -> Token[int | None]:
    """Install the current model's context window (in characters) for this turn."""
    if chars is not None and chars <= 0:
        raise ValueError(f"context window must be a positive number of characters, got {chars!r}")
    return _current_context_window_chars.set(chars)


def reset_context_window_chars(token: Token[int | None]) -> None:
    _current_context_window_chars.reset(token)


def _effective_max_chars(tool: AgentTool) -> int:
    """The per-call ceiling: the tool's own cap, shrunk for small context windows."""
    window = _current_context_window_chars.get()
    if window is None:
        return tool.max_result_chars
    return max(1, min(tool.max_result_chars, int(CONTEXT_SHARE * window)))


def results_dir_for_user(user_id: str | int | None) -> Path:
    """Where ``user_id``'s full results are persisted (not created here).

    ``None`` means no user (a script, the CLI, a turn without a user):
    :data:`LOCAL_RESULTS_DIRNAME`. A user id becomes one path component and must
    look like one, so it can never climb out of the results directory.
    """
    root = get_config().results_dir
    if user_id is None:
        return root / LOCAL_RESULTS_DIRNAME
    component = str(user_id)
    if not _USER_COMPONENT.match(component):
        raise ValueError(f"user id {component!r} cannot name a results directory")
    return root / component


def current_results_dir() -> Path:
    """The results directory of the user whose turn is running (see the module docstring)."""
    turn = get_turn()
    return results_dir_for_user(turn.user_id if turn is not None else None)


def _persist_full_result(text: str, *, tool_name: str, call_id: str) -> Path:
    """Write ``text`` to a new owner-only file in the current user's results directory."""
    directory = current_results_dir()
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    stem = f"{_SAFE_FILE_PART.sub('_', tool_name)[:64]}-{_SAFE_FILE_PART.sub('_', call_id)[:64]}"
    path = directory / f"{stem}-{uuid.uuid4().hex[:8]}.txt"
    # O_EXCL + 0o600: never follow or reuse an existing file, never world-readable.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


def _omission_marker(dropped: int, path: Path | None) -> str:
    saved = f"; full result saved to {path}" if path is not None else ""
    return f"\n[… {dropped:,} characters omitted{saved} …]\n"


def cap_result_text(
    text: str, *, tool: AgentTool, call_id: str, persist: bool = True
) -> CappedText:
    """Keep the head and tail of ``text`` within the tool's effective ceiling.

    The returned text (marker included) never exceeds the ceiling unless the
    ceiling is smaller than the marker itself. With ``tool.persist_full`` (and
    ``persist``) the whole text is saved first and the marker names the file.
    """
    limit = _effective_max_chars(tool)
    if len(text) <= limit:
        return CappedText(text=text)
    path = (
        _persist_full_result(text, tool_name=tool.name, call_id=call_id)
        if tool.persist_full and persist
        else None
    )
    # The marker length depends on the dropped count, which depends on the
    # budget left after the marker: size it with the largest possible count.
    budget = max(0, limit - len(_omission_marker(len(text), path)))
    head = int(budget * tool.head_ratio)
    tail = budget - head
    dropped = len(text) - head - tail
    capped = text[:head] + _omission_marker(dropped, path) + (text[-tail:] if tail else "")
    return CappedText(
        text=capped,
        truncated=True,
        dropped_chars=dropped,
        full_result_path=str(path) if path is not None else None,
    )


class TailAccumulator:
    """Keeps the last ``capacity`` characters of streamed text, in bounded memory.

    Chunks sit in a deque; on overflow whole chunks are evicted from the left
    and the oldest survivor is sliced, so each append is O(1) amortised and
    memory never exceeds ``capacity`` characters plus one incoming chunk.
    Appends are thread-safe: sync tools stream from a worker thread.
    """

    def __init__(self, capacity: int) -> None:
        if capacity <= 0:
            raise ValueError(f"capacity must be positive, got {capacity!r}")
        self.capacity = capacity
        self.dropped_chars = 0
        self._chunks: deque[str] = deque()
        self._size = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._size

    def append(self, chunk: str) -> None:
        if not chunk:
            return
        with self._lock:
            if len(chunk) >= self.capacity:
                self.dropped_chars += self._size + len(chunk) - self.capacity
                self._chunks.clear()
                self._chunks.append(chunk[-self.capacity :])
                self._size = self.capacity
                return
            self._chunks.append(chunk)
            self._size += len(chunk)
            while self._size > self.capacity:
                excess = self._size - self.capacity
                oldest = self._chunks[0]
                if len(oldest) <= excess:
                    self._chunks.popleft()
                    self._size -= len(oldest)
                    self.dropped_chars += len(oldest)
                else:
                    self._chunks[0] = oldest[excess:]
                    self._size -= excess
                    self.dropped_chars += excess

    def text(self) -> str:
        """The retained tail, preceded by a marker when anything was evicted."""
        with self._lock:
            body = "".join(self._chunks)
            if self.dropped_chars:
                return f"[… {self.dropped_chars:,} earlier characters dropped …]\n{body}"
            return body

    def take(self) -> str:
        """Return :meth:`text` and start empty again (used to batch forwarded updates)."""
        text = self.text()
        with self._lock:
            self._chunks.clear()
            self._size = 0
            self.dropped_chars = 0
        return text


def _normalize_result(value: Any) -> tuple[str, Any, bool]:
    """Turn whatever a tool body returned into ``(text, details, persist)``."""
    if isinstance(value, ToolReturn):
        return value.text, value.data, value.persist
    if isinstance(value, AgentToolResult):
        return value.content, value.details, True
    if value is None:
        return "", None, True
    if isinstance(value, str):
        return value, None, True
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace"), None, True
    if isinstance(value, BaseModel):
        return value.model_dump_json(indent=2), value.model_dump(mode="json"), True
    try:
        return json.dumps(value, ensure_ascii=False, indent=2), value, True
    except (TypeError, ValueError):
        return str(value), None, True
