"""HTML → readable plain text for ``web_fetch``, with the standard library's parser.

Page chrome (scripts, styles, navigation, forms, SVG) is dropped; headings become
``#`` lines, list items ``-`` lines, links ``text (url)`` with the URL made absolute,
and paragraphs are separated by one blank line. Preformatted text keeps its layout.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import urljoin

__all__ = ["html_to_text"]

_SKIPPED = frozenset(
    {"script", "style", "nav", "noscript", "svg", "template", "iframe", "form", "button", "select"}
)
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
)
_BLOCKS = frozenset(
    {
        "p", "div", "section", "article", "main", "header", "footer", "aside", "table",
        "tr", "ul", "ol", "dl", "dt", "dd", "blockquote", "figure", "figcaption", "br", "hr",
        "li", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "title",
    }
)  # fmt: skip
_LINE_BLOCKS = frozenset({"li", "br", "tr", "dd", "dt"})
_HEADINGS = {f"h{level}": "#" * level for level in range(1, 7)}
_SPACES = re.compile(r"[ \t\r\f\v\n]+")
_BLANK_LINES = re.compile(r"\n{3,}")


class _TextExtractor(HTMLParser):
    def __init__(self, base_url: str) -> None:
        super().__init__(convert_charrefs=True)
        self._base_url = base_url
        self._parts: list[str] = []
        self._skip_depth = 0
        self._pre_depth = 0
        self._links: list[str | None] = []
        self.title = ""
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED:
            if tag not in _VOID:
                self._skip_depth += 1
            return
        if self._skip_depth:
            return
        if tag == "title":
            self._in_title = True
            return
        if tag in _BLOCKS:
            self._break(1 if tag in _LINE_BLOCKS else 2)
        if tag in _HEADINGS:
            self._parts.append(_HEADINGS[tag] + " ")
        elif tag == "li":
            self._parts.append("- ")
        elif tag == "pre":
            self._pre_depth += 1
        elif tag == "a":
            href = dict(attrs).get("href")
            usable = href and not href.startswith(("javascript:", "#", "data:"))
            self._links.append(urljoin(self._base_url, href) if usable else None)
        elif tag in {"td", "th"} and not self._at_line_start():
            self._parts.append(" | ")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED:
            self._skip_depth = max(0, self._skip_depth - 1)
            return
        if self._skip_depth:
            return
        if tag == "title":
            self._in_title = False
        elif tag == "pre":
            self._pre_depth = max(0, self._pre_depth - 1)
        elif tag == "a" and self._links:
            url = self._links.pop()
            if url:
                self._parts.append(f" ({url})")
        if tag in _BLOCKS and tag != "title":
            self._break(1 if tag in _LINE_BLOCKS else 2)

    def handle_data(self, data: str) -> None:
        if self._skip_depth:
            return
        if self._in_title:
            self.title += data
            return
        if self._pre_depth:
            self._parts.append(data)
            return
        text = _SPACES.sub(" ", data)
        if self._at_line_start() or self._parts[-1].endswith(" "):
            text = text.lstrip(" ")
        if text:
            self._parts.append(text)

    def _break(self, newlines: int) -> None:
        """End the current line with at least ``newlines`` line breaks, never more."""
        if not self._parts:
            return
        trailing = len(self._parts[-1]) - len(self._parts[-1].rstrip("\n"))
        if trailing < newlines:
            self._parts.append("\n" * (newlines - trailing))

    def _at_line_start(self) -> bool:
        return not self._parts or self._parts[-1].endswith("\n")

    def text(self) -> str:
        lines = [line.rstrip() for line in "".join(self._parts).split("\n")]
        body = _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()
        title = _SPACES.sub(" ", self.title).strip()
        return f"{title}\n\n{body}" if title and not body.startswith(title) else body


def html_to_text(html: str, *, base_url: str = "") -> str:
    """Readable text of an HTML document (title first, then the body)."""
    extractor = _TextExtractor(base_url)
    extractor.feed(html)
    extractor.close()
    return extractor.text()
