"""A conversation's automatic title is a short, cleaned-up first message, not the raw text."""

from __future__ import annotations

import pytest

from chat_app.titles import TITLE_CHARS, title_from_message


@pytest.mark.parametrize(
    ("message", "title"),
    [
        ("Which tools can you use?", "Which tools can you use?"),
        ("/bash echo hi", "Echo hi"),
        ("/list_dir", "list_dir"),
        ("/list_dir path=.", "list_dir"),
        ('/todo_write {"todos": []}', "todo_write"),
        ("/read please read notes_2024.txt", "Please read notes_2024.txt"),
        ("why does `list_dir` skip __init__.py?", "Why does list_dir skip __init__.py?"),
        ("snake_case_name is wrong", "snake_case_name is wrong"),
        ("_emphasis_ and *more*", "Emphasis and more"),
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


def test_a_message_of_files_only_is_titled_by_their_names():
    message = (
        "\n\nAttached files (in my workspace):\n"
        "- uploads/notes.txt (12 bytes)\n- uploads/q3_report.csv (4096 bytes)"
    )
    assert title_from_message(message) == "notes.txt, q3_report.csv"
    # With words of its own, the words are the title.
    assert title_from_message("Compare these" + message) == "Compare these"


def test_one_endless_word_is_cut_too():
    assert title_from_message("x" * 500) == "X" + "x" * (TITLE_CHARS - 1) + "…"
