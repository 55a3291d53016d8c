"""Which connects must read their catch-up again (chat_app/turn_registry.py, ``turn_started_since``):
only those whose own conversation started a turn meanwhile."""

from __future__ import annotations

import pytest

from chat_app import turn_registry as turns


@pytest.fixture
def fresh_starts(monkeypatch):
    monkeypatch.setattr(turns, "_starts", 0)
    monkeypatch.setattr(turns, "_last_starts", {})
    monkeypatch.setattr(turns, "_forgotten", 0)
    monkeypatch.setattr(turns, "_in_flight", type(turns._in_flight)())


def _start_and_end(conversation_id: int) -> None:
    turns.flight_begin(conversation_id)
    turns.flight_end(conversation_id)


def test_a_start_of_another_conversation_leaves_a_connect_current(fresh_starts):
    before = turns.turns_started()
    _start_and_end(2)
    assert not turns.turn_started_since(1, before)
    assert turns.turn_started_since(2, before)


def test_a_turn_started_and_ended_meanwhile_still_counts(fresh_starts):
    _start_and_end(1)
    before = turns.turns_started()
    assert not turns.turn_started_since(1, before)
    _start_and_end(1)  # started and finished between the connect's read and its join
    assert turns.turn_started_since(1, before) and not turns.turn_in_flight(1)


def test_a_conversation_no_longer_remembered_answers_maybe(fresh_starts, monkeypatch):
    monkeypatch.setattr(turns, "_LAST_STARTS_KEPT", 2)
    before = turns.turns_started()
    for conversation_id in (1, 2, 3):  # the first is dropped when the third starts
        _start_and_end(conversation_id)
    assert list(turns._last_starts) == [2, 3]
    # Conversation 1 started after ``before``: forgotten, but never reported current.
    assert turns.turn_started_since(1, before)
    later = turns.turns_started()
    assert not turns.turn_started_since(1, later)
    assert not turns.turn_started_since(99, later)
