"""The SSE reader under both transports: events however the network cut them."""

from __future__ import annotations

import pytest

from openprogram.providers.openai_stream import SSEEvents, StreamBroken, parse_chunk

STREAM = (
    b': keep-alive\n\ndata: {"a": 1}\n\nevent: message\nid: 7\ndata: {"b": 2}\n\n'
    b'data: {"c":\ndata: 3}\n\ndata:{"d": 4}\r\n\r\ndata: [DONE]\n\n'
)
EVENTS = [b'{"a": 1}', b'{"b": 2}', b'{"c":\n3}', b'{"d": 4}', b"[DONE]"]


def _feed_in(cuts: list[int]) -> list[bytes]:
    events, reader, start = [], SSEEvents(), 0
    for end in [*cuts, len(STREAM)]:
        events += reader.feed(STREAM[start:end])
        start = end
    return events


def test_one_read_holding_every_event_gives_each_events_data():
    assert _feed_in([]) == EVENTS


@pytest.mark.parametrize("size", [1, 2, 3, 7, 16, 31])
def test_events_cut_anywhere_across_reads_come_out_whole(size):
    assert _feed_in(list(range(size, len(STREAM), size))) == EVENTS


def test_reads_of_whole_single_line_events_take_the_quick_way_and_agree():
    reader = SSEEvents()
    assert reader.feed(b'data: {"x": 1}\n\ndata: {"y": 2}\n\n') == [b'{"x": 1}', b'{"y": 2}']
    assert reader.feed(b"data: [DONE]\n\n") == [b"[DONE]"]


def test_a_chunk_with_whitespace_around_its_json_is_read_as_the_json():
    assert parse_chunk(b' {"choices": []}\n') == {"choices": []}
    assert parse_chunk(b'{"choices": [{"delta": {"content": "hi"}}]}') == {
        "choices": [{"delta": {"content": "hi"}}]
    }


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b'{"choices": []} {"more": 1}', "Extra data"),
        (b'{"choices": [{"delta": ', "Expecting value"),
        (b"", "Expecting value"),
        (b"\xff\xfe", "codec can't decode"),
    ],
)
def test_a_chunk_that_is_not_one_json_value_is_a_broken_stream_saying_why(data, said):
    with pytest.raises(StreamBroken, match="not JSON") as caught:
        parse_chunk(data)
    assert said in str(caught.value)


def test_a_chunk_that_is_json_but_not_an_object_is_a_broken_stream():
    with pytest.raises(StreamBroken, match="not a JSON object"):
        parse_chunk(b"[1, 2]")
