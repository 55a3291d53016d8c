"""A tab joining mid-stream skips the pieces of a merged frame its catch-up already has.

The relay merges streamed pieces that waited in a window into one frame with the last
piece's ``seq`` and lists them in ``parts`` (``chat_app.relay.coalesce_streamed``); the
server side is tested in tests/integration/chat_app/test_relay.py and test_consumers.py.
This runs the page's own transcript script in Chromium on such a frame."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e
SCRIPT = (
    Path(__file__).resolve().parents[2]
    / "openprogram_site"
    / "static"
    / "js"
    / "chat-transcript.js"
)

_RENDER = """(frames) => {
  const root = document.getElementById("root");
  const view = window.createChatTranscript({
    root, send: () => {}, onRunning: () => {}, onTitle: () => {}, onUserMessage: () => {},
  });
  view.catchUp(frames.catch_up);
  frames.live.forEach(view.apply);
  return root.querySelector(".reply").textContent;
}"""


def _render(page, catch_up_texts: list[str], live: list[dict]) -> str:
    page.set_content('<div id="root"></div>')
    page.add_script_tag(path=str(SCRIPT))
    events = [
        {"type": "text_delta", "run_id": 1, "seq": seq, "text": text}
        for seq, text in enumerate(catch_up_texts, start=1)
    ]
    catch_up = {"type": "catch_up", "run_id": 1, "status": "running", "events": events}
    return page.evaluate(_RENDER, {"catch_up": catch_up, "live": live})


def test_a_merged_frame_that_begins_with_caught_up_pieces_renders_only_the_rest(page):
    # Pieces 1-3 came in the catch-up; 2 and 3 also waited in the relay window and
    # went out merged with 4 and 5 (an emoji is two UTF-16 units, as `parts` counts).
    merged = {
        "type": "text_delta",
        "run_id": 1,
        "seq": 5,
        "text": "b😀cde",
        "parts": [[2, 3], [3, 1], [4, 1], [5, 1]],
    }
    assert _render(page, ["a", "b😀", "c"], [merged]) == "ab😀cde"


def test_frames_wholly_seen_are_dropped_and_new_ones_render_whole(page):
    seen = {"type": "text_delta", "run_id": 1, "seq": 2, "text": "b", "parts": [[1, 1], [2, 1]]}
    new = {"type": "text_delta", "run_id": 1, "seq": 5, "text": "de", "parts": [[4, 1], [5, 1]]}
    assert _render(page, ["a", "b", "c"], [seen, new]) == "abcde"
