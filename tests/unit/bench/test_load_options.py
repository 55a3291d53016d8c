"""The load benches' options, arrival patterns and cheap frame reading."""

from __future__ import annotations

import json

import pytest

from bench.__main__ import main as bench_main
from bench.__main__ import split_arguments
from bench._streaming_turns import arrival_offsets
from bench._ws import TurnRecord, frame_kind
from bench.bench_concurrency import _options as concurrency_options
from bench.bench_streaming_load import _options as streaming_options


def test_options_after_the_bench_name_go_to_that_bench():
    names, options = split_arguments(["streaming_load", "--chats", "20", "--arrivals", "burst"])
    assert names == ["streaming_load"]
    assert options == ["--chats", "20", "--arrivals", "burst"]


def test_a_bench_without_options_refuses_them_instead_of_running(capsys):
    assert bench_main(["page_weight", "--turns", "3"]) == 2
    assert "bench_page_weight takes none" in capsys.readouterr().err


def test_the_defaults_are_what_the_issue_asks_for():
    streaming = streaming_options([])
    assert (streaming.chats, streaming.arrivals, streaming.spread) == (
        100,
        ["burst", "spread"],
        2.0,
    )
    concurrency = concurrency_options([])
    assert (concurrency.turns, concurrency.only) == (100, ["sqlite", "postgres", "redis"])


def test_a_short_focused_run_is_one_option_away():
    assert concurrency_options(["--only", "postgres", "--turns", "20"]).only == ["postgres"]
    assert streaming_options(["--chats", "20", "--arrivals", "spread"]).arrivals == ["spread"]


def test_the_model_answers_at_once_unless_a_latency_is_asked_for(capsys):
    assert streaming_options([]).model_latency == 0.0
    assert streaming_options(["--model-latency", "200"]).model_latency == 200.0
    with pytest.raises(SystemExit):
        streaming_options(["--model-latency", "-5"])
    assert "--model-latency cannot be negative" in capsys.readouterr().err


def test_an_unknown_setup_or_arrival_pattern_is_refused_with_the_choices(capsys):
    with pytest.raises(SystemExit):
        concurrency_options(["--only", "mysql"])
    assert "unknown setup 'mysql'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        streaming_options(["--arrivals", "trickle"])
    assert "burst, spread" in capsys.readouterr().err


def test_a_burst_sends_all_at_once_and_a_spread_over_the_window():
    assert arrival_offsets("burst", 3, window=2.0) == [0.0, 0.0, 0.0]
    spread = arrival_offsets("spread", 100, window=2.0)
    assert spread == sorted(spread)
    assert 0.0 <= spread[0] < 0.2 and 1.8 < spread[-1] < 2.0
    assert arrival_offsets("spread", 100, window=2.0) == spread  # seeded: runs compare


def test_a_frame_kind_is_read_without_decoding_when_type_comes_first():
    assert frame_kind(json.dumps({"type": "text_delta", "text": '"type": "x"'})) == "text_delta"
    assert frame_kind(json.dumps({"run_id": 3, "type": "turn_finished"})) == "turn_finished"
    assert frame_kind(b'{"type": "catch_up"}') == "catch_up"


def test_frames_are_decoded_when_read_after_the_turn():
    record = TurnRecord(seconds=0.0, stop_reason="", raw_frames=['{"type": "a"}'])
    assert record.frames == [{"type": "a"}]
    record.raw_frames.append('{"type": "b"}')
    assert [f["type"] for f in record.frames] == ["a", "b"]
