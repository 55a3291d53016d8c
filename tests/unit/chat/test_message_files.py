"""The composer's list of attached files is read back from a message, and nothing else is."""

from __future__ import annotations

from chat_app.message_files import AttachedFile, split_attached

LIST = "Attached files (in my workspace):\n- uploads/a b.txt (12 bytes)\n- uploads/c.csv (0 bytes)"


def test_the_list_at_the_end_is_split_from_the_text():
    text, files = split_attached(f"Read these\n\n{LIST}")
    assert text == "Read these"
    assert files == [AttachedFile("uploads/a b.txt", 12), AttachedFile("uploads/c.csv", 0)]
    assert files[0].name == "a b.txt"


def test_a_message_of_files_only_has_no_text():
    assert split_attached(f"\n\n{LIST}") == ("", split_attached(LIST)[1])


def test_a_quoted_header_or_a_changed_list_keeps_the_whole_text():
    quoted = f"What does '{LIST}' mean?"
    assert split_attached(quoted) == (quoted, [])
    edited = f"{LIST}\nand some words after it"
    assert split_attached(edited) == (edited, [])
    assert split_attached("no files here") == ("no files here", [])
