"""A conversation's automatic title is a short, cleaned-up first message, not the raw text."""

from __future__ import annotations

import pytest

from chat_app.titles import TITLE_CHARS, title_from_message


@pytest.mark.parametrize(
    ("message", "title"),
    [
        ("Which tools can you use?", "Which tools can you use?"),
        ("/bash echo hi", "Bash echo hi"),
        ("# Fix **this** [bug](http://example.com/x)", "Fix this bug"),
        ("```python\nprint(1)\n```\nwhy does this print 1?", "Why does this print 1?"),
        ("Summarise the report. Then email it to the team.", "Summarise the report"),
        ("  \n\n  ", "New chat"),
    ],
)
def test_the_title_is_the_cleaned_first_sentence(message, title):
    assert title_from_message(message) == title


def test_a_long_message_is_cut_at_a_word_boundary():
    title = title_from_message(
        "please help me plan a trip to the mountains next summer with friends"
    )
    assert title == "Please help me plan a trip to the mountains next…"
    assert len(title) <= TITLE_CHARS + 1


def test_one_endless_word_is_cut_too():
    assert title_from_message("x" * 500) == "X" + "x" * (TITLE_CHARS - 1) + "…"
