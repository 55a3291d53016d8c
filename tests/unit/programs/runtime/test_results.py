"""Result caps, persisted full results, the dynamic ceiling and the tail accumulator."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openprogram.agent.context import TurnContext, current_turn
from openprogram.agent.types import AgentTool
from openprogram.config import get_config
from openprogram.programs.results import (
    LOCAL_RESULTS_DIRNAME,
    TailAccumulator,
    _effective_max_chars,
    cap_result_text,
    reset_context_window_chars,
    results_dir_for_user,
    set_context_window_chars,
)


def _tool(**settings) -> AgentTool:
    return AgentTool(name="big_tool", description="Big.", **settings)


def test_short_text_is_returned_untouched():
    capped = cap_result_text("hello", tool=_tool(max_result_chars=10), call_id="c1")
    assert (capped.text, capped.truncated, capped.dropped_chars) == ("hello", False, 0)
    assert capped.full_result_path is None


def test_it_keeps_head_and_tail_with_a_marker_within_the_ceiling():
    text = "H" * 5_000 + "M" * 10_000 + "T" * 5_000
    tool = _tool(max_result_chars=1_000, persist_full=False)
    capped = cap_result_text(text, tool=tool, call_id="c1")
    assert capped.truncated
    assert len(capped.text) <= 1_000
    assert capped.text.startswith("H")
    assert capped.text.endswith("T")
    assert "M" not in capped.text.replace("omitted", "")
    assert f"{capped.dropped_chars:,} characters omitted" in capped.text
    kept = capped.text.count("H") + capped.text.count("T")
    assert kept + capped.dropped_chars == len(text)


def test_head_ratio_decides_how_much_of_the_head_is_kept():
    text = "H" * 10_000 + "T" * 10_000
    capped = cap_result_text(
        text, tool=_tool(max_result_chars=1_000, head_ratio=0.8, persist_full=False), call_id="c"
    )
    heads, tails = capped.text.count("H"), capped.text.count("T")
    assert heads == pytest.approx(4 * tails, rel=0.02)


def test_persist_full_writes_the_whole_text_owner_only_and_names_it_in_the_marker():
    text = "".join(f"line {i}\n" for i in range(5_000))
    capped = cap_result_text(text, tool=_tool(max_result_chars=2_000), call_id="call/../7")
    path = Path(capped.full_result_path)
    assert path.parent == get_config().results_dir / LOCAL_RESULTS_DIRNAME
    assert "big_tool" in path.name and "7" in path.name and "/" not in path.name[:-4]
    assert path.read_text() == text
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert str(path) in capped.text


def test_a_turns_full_result_is_persisted_in_its_users_own_directory():
    token = current_turn.set(TurnContext(user_id=42))
    try:
        capped = cap_result_text("x" * 5_000, tool=_tool(max_result_chars=500), call_id="c")
    finally:
        current_turn.reset(token)
    path = Path(capped.full_result_path)
    assert path.parent == get_config().results_dir / "42" == results_dir_for_user(42)
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    assert str(path) in capped.text


def test_outside_a_turn_results_go_to_a_directory_no_user_id_can_name():
    assert results_dir_for_user(None).name == LOCAL_RESULTS_DIRNAME
    with pytest.raises(ValueError, match="'_local'"):
        results_dir_for_user(LOCAL_RESULTS_DIRNAME)


@pytest.mark.parametrize("user_id", ["..", "a/b", "", "../alice", ".hidden", "x\x00"])
def test_a_user_id_that_is_not_one_path_component_is_refused(user_id):
    with pytest.raises(ValueError, match="cannot name a results directory"):
        results_dir_for_user(user_id)


def test_persist_false_skips_writing_even_when_capped():
    capped = cap_result_text(
        "x" * 5_000, tool=_tool(max_result_chars=500), call_id="c", persist=False
    )
    assert capped.truncated and capped.full_result_path is None
    assert not get_config().results_dir.exists()


def test_the_ceiling_shrinks_to_a_share_of_a_small_context_window():
    tool = _tool(max_result_chars=50_000)
    assert _effective_max_chars(tool) == 50_000
    token = set_context_window_chars(10_000)
    try:
        assert _effective_max_chars(tool) == 3_000
        capped = cap_result_text("x" * 20_000, tool=tool, call_id="c")
        assert capped.truncated and len(capped.text) <= 3_000
    finally:
        reset_context_window_chars(token)
    assert _effective_max_chars(tool) == 50_000


def test_a_large_context_window_never_raises_the_tool_cap():
    token = set_context_window_chars(10_000_000)
    try:
        assert _effective_max_chars(_tool(max_result_chars=1_000)) == 1_000
    finally:
        reset_context_window_chars(token)


def test_it_rejects_a_non_positive_context_window():
    with pytest.raises(ValueError, match="positive"):
        set_context_window_chars(0)


def test_tail_accumulator_keeps_only_the_last_capacity_characters():
    acc = TailAccumulator(10)
    for chunk in ("abc", "defg", "hijkl", "mn"):
        acc.append(chunk)
    assert len(acc) == 10
    assert acc.dropped_chars == 4
    assert acc.text().endswith("efghijklmn")
    assert acc.text().startswith("[… 4 earlier characters dropped …]")


def test_tail_accumulator_handles_a_chunk_larger_than_capacity():
    acc = TailAccumulator(5)
    acc.append("ab")
    acc.append("0123456789")
    assert acc.text().endswith("56789") and len(acc) == 5
    assert acc.dropped_chars == 7


def test_tail_accumulator_without_overflow_has_no_marker_and_take_empties_it():
    acc = TailAccumulator(100)
    acc.append("hello ")
    acc.append("world")
    assert acc.take() == "hello world"
    assert len(acc) == 0 and acc.text() == ""


def test_tail_accumulator_rejects_zero_capacity():
    with pytest.raises(ValueError, match="capacity"):
        TailAccumulator(0)


@settings(max_examples=200, deadline=None)
@given(
    # No "[" in the input, so the marker is the only "[" in the output.
    text=st.text(st.characters(blacklist_characters="["), max_size=3_000),
    limit=st.integers(min_value=120, max_value=2_000),
    head_ratio=st.floats(min_value=0.05, max_value=0.95),
)
def test_capping_never_exceeds_the_ceiling_and_keeps_a_real_head_and_tail(text, limit, head_ratio):
    tool = _tool(max_result_chars=limit, head_ratio=head_ratio, persist_full=False)
    capped = cap_result_text(text, tool=tool, call_id="c")
    assert len(capped.text) <= limit
    if not capped.truncated:
        assert capped.text == text
        return
    head, _, tail = capped.text.partition("\n[… ")
    tail = tail.split(" …]\n", 1)[1]
    assert text.startswith(head) and text.endswith(tail)
    assert len(head) + len(tail) + capped.dropped_chars == len(text)


@settings(max_examples=200, deadline=None)
@given(chunks=st.lists(st.text(max_size=50), max_size=60), capacity=st.integers(1, 120))
def test_the_accumulator_always_holds_exactly_the_last_capacity_characters(chunks, capacity):
    acc = TailAccumulator(capacity)
    for chunk in chunks:
        acc.append(chunk)
    whole = "".join(chunks)
    assert len(acc) == min(len(whole), capacity)
    assert acc.dropped_chars == len(whole) - len(acc)
    assert acc.text().endswith(whole[-capacity:] if whole else "")
