"""Layer 4: can this tool run right now? The check_fn / requires_env / can_use triad.

Only consulted when resolution is asked for ``only_available=True`` (the
dispatcher's path), so the model never sees a tool that would fail on call.
A gate that raises makes its tool unavailable with the error as the reason: a
broken gate hides one tool, it never breaks the turn.

Reasons a person can act on: a ``check_fn`` or ``can_use`` that knows *why* its
tool cannot run raises :class:`ToolUnavailable` with a message saying what to
do, and that message is the whole layer-4 reason shown on the Programs page,
in the API and in the explain trace::

    def _search_configured() -> bool:
        if not backend():
            raise ToolUnavailable("no web search backend: set SEARXNG_URL or BRAVE_API_KEY")
        return True

Returning a falsy value still works; the reason then only says which gate
refused (``check_fn returned False``). Any other exception reads
``check_fn raised <type>: <message>``, since it is a bug, not a decision.

``can_use`` convention: it is called with the host's session context as
keyword arguments (``can_use(**can_use_context)``, e.g. ``user_id=...,
source=..., attended=...``), so it should accept ``**kwargs`` for keys it
ignores. Without a context it is called with no arguments.
"""

from __future__ import annotations

import inspect
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from openprogram.agent.types import AgentTool

__all__ = [
    "CHECK_FN_TTL_SECONDS",
    "ToolUnavailable",
    "clear_availability_cache",
    "unavailable_reason",
]

CHECK_FN_TTL_SECONDS = 2.0
"""check_fn results are reused this long, so one turn's repeated resolutions call it once."""

_check_cache: dict[tuple[str, int], tuple[float, str | None]] = {}
_check_lock = threading.Lock()


class ToolUnavailable(Exception):
    """Raised by a check_fn or can_use: the tool cannot run now, and the message says why."""

    def __init__(self, reason: str) -> None:
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError(f"ToolUnavailable needs a reason a person can act on, got {reason!r}")
        super().__init__(reason)
        self.reason = reason


def clear_availability_cache() -> None:
    with _check_lock:
        _check_cache.clear()


def _call_gate(gate_name: str, gate: Callable[..., Any], kwargs: Mapping[str, Any]) -> str | None:
    try:
        outcome = gate(**kwargs)
    except ToolUnavailable as exc:
        return exc.reason
    except Exception as exc:
        return f"{gate_name} raised {type(exc).__name__}: {exc}"
    if inspect.isawaitable(outcome):
        if inspect.iscoroutine(outcome):
            outcome.close()
        return f"{gate_name} must be synchronous (it returned an awaitable)"
    return None if outcome else f"{gate_name} returned {outcome!r}"


def _check_fn_reason(tool: AgentTool, check_fn: Callable[[], Any]) -> str | None:
    key = (tool.name, id(check_fn))
    now = time.monotonic()
    with _check_lock:
        cached = _check_cache.get(key)
    if cached is not None and cached[0] > now:
        return cached[1]
    reason = _call_gate("check_fn", check_fn, {})
    with _check_lock:
        _check_cache[key] = (now + CHECK_FN_TTL_SECONDS, reason)
    return reason


def unavailable_reason(tool: AgentTool, can_use_context: Mapping[str, Any]) -> str | None:
    """Why ``tool`` cannot run now, or None when it can. Never raises."""
    if tool.unavailable_reason:
        return tool.unavailable_reason
    for variable in tool.requires_env:
        if not os.environ.get(variable):
            return f"requires_env {variable} is not set"
    if tool.check_fn is not None:
        reason = _check_fn_reason(tool, tool.check_fn)
        if reason is not None:
            return reason
    if tool.can_use is not None:
        return _call_gate("can_use", tool.can_use, can_use_context)
    return None
