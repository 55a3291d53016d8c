"""HTML → readable text: chrome dropped, structure kept as plain-text conventions."""

from __future__ import annotations

from openprogram.programs.builtin._html_text import html_to_text

PAGE = """<html><head><title>Guide  to   otters</title><style>p{}</style></head><body>
<nav><a href="/">Home</a></nav><noscript>enable js</noscript>
<h1>Otters</h1><h2>Diet</h2>
<p>They eat <b>fish</b> and <a href="crabs.html">crabs</a>.</p>
<ul><li>river</li><li>sea</li></ul>
<pre>  indented
    code</pre>
<table><tr><th>name</th><th>size</th></tr><tr><td>sea otter</td><td>big</td></tr></table>
<a href="javascript:alert(1)">click</a><form><input name=q><button>Go</button></form>
<script>document.write("tracking")</script>
</body></html>"""


def test_it_keeps_title_headings_links_lists_pre_and_tables():
    text = html_to_text(PAGE, base_url="https://example.org/animals/")
    assert text.splitlines() == [
        "Guide to otters",
        "",
        "# Otters",
        "",
        "## Diet",
        "",
        "They eat fish and crabs (https://example.org/animals/crabs.html).",
        "",
        "- river",
        "- sea",
        "",
        "  indented",
        "    code",
        "",
        "name | size",
        "sea otter | big",
        "",
        "click",
    ]


def test_it_survives_broken_markup():
    assert html_to_text("<p>unclosed <b>bold <i>both</p></div></span>text") == (
        "unclosed bold both\n\ntext"
    )
