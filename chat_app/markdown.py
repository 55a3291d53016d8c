"""Assistant and user text as safe HTML: CommonMark with raw HTML off and links checked.

Contract:

1. Raw HTML in the text is never passed through (``html`` disabled): ``<script>``
   arrives as text.
2. A link or image keeps its target only when the scheme is http, https or mailto
   (or it is relative); anything else (``javascript:``, ``data:``, ``vbscript:``)
   loses its href/src.
3. Every link opens with ``rel="noopener noreferrer nofollow"``.

A person's own message (``render_user_markdown``) goes through the same renderer, built
the same way, except that a single line break stays a line break, as it was typed.
"""

from __future__ import annotations

from functools import lru_cache
from urllib.parse import urlparse

from markdown_it import MarkdownIt

__all__ = ["render_markdown", "render_user_markdown"]

_SAFE_SCHEMES = frozenset({"http", "https", "mailto", ""})


def _is_safe_url(url: str) -> bool:
    # Browsers ignore control characters and whitespace inside a scheme; strip them first.
    cleaned = "".join(ch for ch in url if ch.isprintable() and not ch.isspace())
    return urlparse(cleaned).scheme.lower() in _SAFE_SCHEMES


def _build(*, breaks: bool = False) -> MarkdownIt:
    options = {"html": False, "linkify": False, "typographer": False, "breaks": breaks}
    md = MarkdownIt("commonmark", options)
    md.validateLink = _is_safe_url
    md.enable("table")
    # With html off these rules only ever answer "not HTML" (the text stays text), but
    # they run on every line and every "<": a fifth of a long reply's rendering time.
    md.disable(["html_block", "html_inline"])

    def link_open(renderer, tokens, idx, options, env):
        tokens[idx].attrSet("rel", "noopener noreferrer nofollow")
        tokens[idx].attrSet("target", "_blank")
        return renderer.renderToken(tokens, idx, options, env)

    md.add_render_rule("link_open", link_open)
    return md


_md = _build()
_user_md = _build(breaks=True)

_REMEMBERED_CHARS = 32_768
"""Replies and messages up to this long are remembered once rendered (at most 256 of
them, so at most ~25 MB of text and HTML): a conversation page renders every reply of the conversation on
each load (~2 ms for a 1.3 KB reply with a table and code), and a reload, a second tab
or the turn's own finish renders the same texts again."""


@lru_cache(maxsize=256)
def _render_remembered(text: str, *, user: bool) -> str:
    return (_user_md if user else _md).render(text)


def _render(text: str, *, user: bool) -> str:
    text = text or ""
    if len(text) > _REMEMBERED_CHARS:
        return (_user_md if user else _md).render(text)
    return _render_remembered(text, user=user)


def render_markdown(text: str) -> str:
    """Safe HTML for ``text`` (see the module contract)."""
    return _render(text, user=False)


def render_user_markdown(text: str) -> str:
    """Safe HTML for a person's message: as ``render_markdown``, line breaks kept."""
    return _render(text, user=True)
