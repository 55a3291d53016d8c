"""A conversation's automatic title: a short, cleaned-up version of its first message.

Not the raw message: code blocks, Markdown marks, link targets and a leading slash
command's slash are dropped, only the first sentence of the first line is kept, cut at a
word boundary to ``TITLE_CHARS`` and capitalised. A message with nothing left is "New chat".
"""

from __future__ import annotations

import re

__all__ = ["TITLE_CHARS", "title_from_message"]

TITLE_CHARS = 48
_FENCED = re.compile(r"```.*?(```|$)", re.S)
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_LINE_MARKS = re.compile(r"^\s*(#+|>+|[-*+]|\d+[.)])\s+")
_INLINE_MARKS = re.compile(r"[*_~`]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def title_from_message(text: str) -> str:
    text = _LINK.sub(r"\1", _FENCED.sub(" ", text))
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    line = _INLINE_MARKS.sub("", _LINE_MARKS.sub("", line)).strip().lstrip("/")
    line = " ".join(line.split())
    sentence = _SENTENCE_END.split(line, maxsplit=1)[0]
    if len(sentence.split()) >= 2:
        line = sentence
    line = line.rstrip(" .,:;")
    if len(line) > TITLE_CHARS:
        cut = line[: TITLE_CHARS + 1].rsplit(" ", 1)[0] if " " in line[:TITLE_CHARS] else ""
        line = (cut or line[:TITLE_CHARS]).rstrip(" .,:;") + "…"
    return (line[:1].upper() + line[1:]) or "New chat"
