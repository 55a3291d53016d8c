"""A conversation's automatic title: a short, cleaned-up version of its first message.

Not the raw message: code blocks, Markdown marks, link targets and a leading slash
command word are dropped, only the first sentence of the first line is kept, cut at a
word boundary to ``TITLE_CHARS``. Identifiers stay as written (``list_dir`` keeps its
underscore and its case); a first word of plain lowercase letters is capitalised. A
slash command with only arguments after it is titled by its name; a message of attached files
only, by the files' names. A message with nothing left is "New chat".
"""

from __future__ import annotations

import re

from chat_app.message_files import split_attached

__all__ = ["TITLE_CHARS", "title_from_message"]

TITLE_CHARS = 48
_FENCED = re.compile(r"```.*?(```|$)", re.S)
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_LINE_MARKS = re.compile(r"^\s*(#+|>+|[-*+]|\d+[.)])\s+")
# Emphasis and code marks, not the underscores of an identifier (list_dir, __init__.py).
_INLINE_MARKS = re.compile(r"(?<!\w)[*~`]+|[*~`]+(?!\w)")
_UNDERSCORE_EMPHASIS = re.compile(r"(?<![\w.])(_{1,2})(?=\S)(.+?)(?<=\S)\1(?![\w.])")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_COMMAND = re.compile(r"^/(?P<name>[\w.:-]+)\s*(?P<rest>.*)$")
_ARGUMENTS_ONLY = re.compile(r"^(\{.*|(\w+=\S*\s*)+)$")


def _without_command(line: str) -> str:
    """A leading ``/command`` word dropped; its name is the title when only arguments
    (``key=value`` pairs, a JSON object) follow."""
    match = _COMMAND.match(line)
    if match is None:
        return line
    rest = match["rest"].strip()
    return match["name"] if not rest or _ARGUMENTS_ONLY.match(rest) else rest


def _shorten(line: str) -> str:
    sentence = _SENTENCE_END.split(line, maxsplit=1)[0]
    if len(sentence.split()) >= 2:
        line = sentence
    line = line.rstrip(" .,:;")
    if len(line) > TITLE_CHARS:
        cut = line[: TITLE_CHARS + 1].rsplit(" ", 1)[0] if " " in line[:TITLE_CHARS] else ""
        line = (cut or line[:TITLE_CHARS]).rstrip(" .,:;") + "…"
    return line


def _capitalised(line: str) -> str:
    first = line.split(" ", 1)[0]
    return line[:1].upper() + line[1:] if first.isalpha() and first.islower() else line


def title_from_message(text: str) -> str:
    text, files = split_attached(text)
    text = _LINK.sub(r"\1", _FENCED.sub(" ", text))
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    line = _INLINE_MARKS.sub("", _LINE_MARKS.sub("", line))
    line = _UNDERSCORE_EMPHASIS.sub(r"\2", line).strip()
    line = " ".join(_without_command(line).split())
    if not line and files:
        line = ", ".join(f.name for f in files)
    return _shorten(_capitalised(line)) or "New chat"
