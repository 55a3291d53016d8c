"""Assistant Markdown is rendered safe: no raw HTML, no script links."""

from chat_app.markdown import render_markdown


def test_it_renders_commonmark():
    assert (
        render_markdown("**bold** and `code`")
        == "<p><strong>bold</strong> and <code>code</code></p>\n"
    )


def test_it_escapes_raw_html():
    html = render_markdown("<img src=x onerror=alert(1)><script>alert(1)</script>")
    assert "<script>" not in html and "<img" not in html
    assert "&lt;script&gt;" in html


def test_it_drops_javascript_and_data_links():
    for url in (
        "javascript:alert(1)",
        "JaVaScRiPt:alert(1)",
        "java\tscript:alert(1)",
        "data:text/html,x",
    ):
        html = render_markdown(f"[click]({url})")
        assert "href" not in html, url


def test_safe_links_open_without_leaking_the_opener():
    html = render_markdown("[docs](https://example.com/a)")
    assert 'href="https://example.com/a"' in html
    assert 'rel="noopener noreferrer nofollow"' in html
