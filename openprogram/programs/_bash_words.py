"""What a ``bash`` command is, as policy conditions read it.

Contract:

1. :func:`simple_command` returns the command's words joined by single spaces only when
   the command is one simple command: no ``;``, ``&``, ``|``, redirections, ``$`` (so no
   ``$(``, ``${`` or variables), backticks, parentheses, braces, globs, ``~``, ``#``,
   backslashes, newlines or other control characters, and quotes that ``shlex`` (POSIX)
   can close. Anything else gives None, and an *allow* condition never matches it:
   ``git status; curl … | sh`` never rides on a ``git status*`` allow.
2. :func:`command_segments` is for *deny* and *ask* conditions, which are best-effort:
   it splits a command at its operators and gives each piece's words; a command
   ``shlex`` cannot read gives None, and the caller then counts the condition as
   matching (a restriction errs on the strict side).
"""

from __future__ import annotations

import shlex

__all__ = ["command_segments", "simple_command"]

_NOT_SIMPLE = frozenset(";&|<>`$(){}*?[]~#\\!\n\r\t\x0b\x0c\x00")
_OPERATOR_CHARS = frozenset(";&|<>()")


def simple_command(command: str) -> str | None:
    """The words of one simple command joined by single spaces, else None (module doc)."""
    if not isinstance(command, str) or not _NOT_SIMPLE.isdisjoint(command):
        return None
    if any(ord(c) < 32 or ord(c) == 127 for c in command):
        return None
    try:
        words = shlex.split(command, posix=True)
    except ValueError:
        return None
    return " ".join(words) if words else None


def command_segments(command: str) -> list[str] | None:
    """Each piece of a compound command as words joined by spaces; None when unreadable."""
    if not isinstance(command, str):
        return None
    # Newlines and backticks start another command as ``;`` and ``$(`` do. Inside quotes
    # they would not, but a restriction may err on the strict side.
    for separator in ("\r\n", "\n", "\r", "`"):
        command = command.replace(separator, " ; ")
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    segments: list[list[str]] = [[]]
    try:
        for token in lexer:
            if token and set(token) <= _OPERATOR_CHARS:
                segments.append([])
            else:
                segments[-1].append(token)
    except ValueError:
        return None
    return [" ".join(words) for words in segments if words]
