"""This process's running turns, by conversation: which turn runs, which are in flight.

``chat_app.turns`` holds a conversation's slot here while it starts and runs a turn; the
socket (``chat_app.consumers``) and the turn store's connect (``chat_app.turn_store``)
read it to know whether a catch-up read now can miss events. A module of its own so the
store reads it without importing the turns that call the store.
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING

from channels.layers import InMemoryChannelLayer, get_channel_layer

from core.channel_layer import LocalChannelLayer

if TYPE_CHECKING:
    from chat_app.turns import ActiveTurn

__all__ = [
    "active_turn",
    "flight_begin",
    "flight_end",
    "single_process_layer",
    "turn_hold",
    "turn_in_flight",
    "turn_release",
    "turn_started_since",
    "turns_running",
    "turns_started",
]

_active: dict[int, ActiveTurn] = {}
_in_flight: collections.Counter[int] = collections.Counter()
"""Turns per conversation from their start until their task has ended (every event
written): longer than ``_active``, which a turn leaves before its reply is stored."""
_starts = 0
_last_starts: dict[int, int] = {}
"""Each conversation's latest start, as the value of ``_starts`` it took, oldest first;
only the latest 4096 kept (``_forgotten`` is the newest one dropped)."""
_LAST_STARTS_KEPT = 4096
_forgotten = 0


def active_turn(conversation_id: int) -> ActiveTurn | None:
    """The turn this process is running for ``conversation_id``, if any."""
    return _active.get(conversation_id)


def turns_running() -> list[ActiveTurn]:
    """Every turn this process is running."""
    return list(_active.values())


def turn_hold(conversation_id: int, turn: ActiveTurn) -> bool:
    """Take ``conversation_id``'s slot for ``turn``; False if a turn holds it already."""
    if conversation_id in _active:
        return False
    _active[conversation_id] = turn
    return True


def turn_release(conversation_id: int, turn: ActiveTurn) -> None:
    """Give the slot back, if ``turn`` still holds it (a next turn may hold it already)."""
    if _active.get(conversation_id) is turn:
        del _active[conversation_id]


def turn_in_flight(conversation_id: int) -> bool:
    """True from a turn's start in this process until its last event is in history."""
    return _in_flight[conversation_id] > 0


def turns_started() -> int:
    """How many turns this process has started (a connecting socket compares two reads)."""
    return _starts


def turn_started_since(conversation_id: int, starts: int) -> bool:
    """True if a turn of ``conversation_id`` may have started in this process after
    :func:`turns_started` returned ``starts`` (a connecting socket: turns of other
    conversations do not make its catch-up stale)."""
    return _last_starts.get(conversation_id, _forgotten) > starts


def flight_begin(conversation_id: int) -> None:
    """A turn of ``conversation_id`` starts: in flight until :func:`flight_end`."""
    global _starts, _forgotten
    _starts += 1
    _last_starts.pop(conversation_id, None)
    _last_starts[conversation_id] = _starts
    if len(_last_starts) > _LAST_STARTS_KEPT:
        _forgotten = _last_starts.pop(next(iter(_last_starts)))
    _in_flight[conversation_id] += 1


def flight_end(conversation_id: int) -> None:
    _in_flight[conversation_id] -= 1
    if _in_flight[conversation_id] <= 0:
        del _in_flight[conversation_id]


def single_process_layer() -> bool:
    """True when no other process can be running turns (the in-memory channel layer)."""
    return isinstance(get_channel_layer(), (LocalChannelLayer, InMemoryChannelLayer))
