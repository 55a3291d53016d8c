"""Regexes in policy rules run on RE2 (``google-re2``): linear time, whatever the pattern.

A pattern written by a user or an admin is compiled here and nowhere else. RE2 refuses
what it cannot run in linear time (backreferences, lookaround); the refusal is a
:class:`RegexProblem` naming the field, so a form can say which one is wrong. Python's
``re`` is never used on such a pattern: ``(a+)+b`` against 50 ``a``s would take years.
"""

from __future__ import annotations

import functools
from typing import Any, Protocol

import re2

__all__ = ["MAX_PATTERN_CHARS", "Pattern", "RegexProblem", "compile_pattern"]

MAX_PATTERN_CHARS = 1_000


class Pattern(Protocol):
    def fullmatch(self, text: str) -> Any: ...

    def search(self, text: str) -> Any: ...


class RegexProblem(ValueError):
    """A pattern RE2 refuses (or one too long); ``field`` names the form field."""

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message)
        self.field = field


@functools.cache
def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # a refused pattern is our answer, not a log line
    return options


@functools.lru_cache(maxsize=4096)
def _compiled(pattern: str) -> Pattern:
    return re2.compile(pattern, options=_options())


def compile_pattern(pattern: str, *, field: str) -> Pattern:
    """``pattern`` compiled by RE2 (cached); RegexProblem naming ``field`` when refused."""
    if not isinstance(pattern, str):
        raise RegexProblem(f"{field} must be text", field=field)
    if len(pattern) > MAX_PATTERN_CHARS:
        raise RegexProblem(f"{field} is longer than {MAX_PATTERN_CHARS} characters", field=field)
    try:
        return _compiled(pattern)
    except re2.error as exc:
        detail = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
        raise RegexProblem(f"{field} {pattern!r} is refused: {detail}", field=field) from None
