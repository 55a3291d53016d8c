"""Loop timers shared by many turns: deadlines that fall close together fire in one callback.

A streaming turn keeps deadlines running all the time: its relay window closes every
20 ms (``chat_app.relay``) and its buffered streamed text is written to history every
0.25 s (``chat_app.turn_events``). With a timer each, turns that started at different
moments (users arrive one by one, not in a burst) keep the event loop waking for one
turn at a time, and each history write becomes a database batch of its own (a thread
hop and a transaction) where turns that started together share one. Here a deadline
joins a timer already set for at most ``early`` seconds before it, so it may fire up to
that much early, never late; otherwise it starts a timer of its own.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["SharedTimers"]

_log = logging.getLogger(__name__)

_Owner = TypeVar("_Owner")


class _Due(Generic[_Owner]):
    __slots__ = ("at", "owners")

    def __init__(self, at: float, owner: _Owner) -> None:
        self.at = at
        self.owners = [owner]


class SharedTimers(Generic[_Owner]):
    """Timers of one kind, per event loop: ``fire(owner, token)`` runs for every owner
    whose deadline a timer covers. The token :meth:`at` returned tells an owner whether
    the timer that fired is still its own (it may have moved on since: then it ignores
    the call), as a timer shared by others cannot be cancelled."""

    def __init__(self, *, early: float, fire: Callable[[_Owner, list[_Owner]], None]) -> None:
        self._early = early
        self._fire_owner = fire
        # No reference to a loop: loops are the keys these live under, weakly.
        self._last: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Due[_Owner]] = (
            weakref.WeakKeyDictionary()
        )

    def at(self, loop: asyncio.AbstractEventLoop, when: float, owner: _Owner) -> list[_Owner]:
        """Call ``fire(owner, token)`` at ``when`` (loop time) or up to ``early`` before;
        returns the token."""
        last = self._last.get(loop)
        if last is not None and 0.0 <= when - last.at < self._early:
            last.owners.append(owner)
            return last.owners
        due = self._last[loop] = _Due(when, owner)
        # Deadlines of many turns fire in it: in a context of its own, none of theirs.
        loop.call_at(when, self._fire, loop, due, context=contextvars.Context())
        return due.owners

    def _fire(self, loop: asyncio.AbstractEventLoop, due: _Due[_Owner]) -> None:
        if self._last.get(loop) is due:  # no later deadline may join a timer that went off
            del self._last[loop]
        for owner in due.owners:
            try:
                self._fire_owner(owner, due.owners)
            except Exception:  # one turn's failure must not hold the others back
                _log.exception("a shared timer's callback failed for %r", owner)
