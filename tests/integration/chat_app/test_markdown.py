"""Assistant Markdown is rendered safe: no raw HTML, no script links."""

import uuid

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


def test_raw_html_with_event_handlers_stays_text_in_blocks_inline_and_tables():
    for source in (
        '<div onclick="alert(1)">hi</div>',
        "a <span onmouseover=alert(1)>b</span> c",
        "| a |\n|---|\n| <b onclick=alert(1)>x</b> |",
        "<!-- <script>alert(1)</script> -->",
    ):
        html = render_markdown(source)
        assert "<div" not in html and "<span" not in html and "<b " not in html, source
        assert "<script" not in html and "<!--" not in html, source
        assert "&lt;" in html, source


def test_a_quote_in_a_link_title_or_image_text_cannot_open_an_attribute():
    link = render_markdown('[x](https://a.example "\\" onmouseover=\\"alert(1)")')
    image = render_markdown('![x" onerror="alert(1)](https://a.example/b.png)')
    assert 'title="&quot; onmouseover=&quot;alert(1)"' in link
    assert 'alt="x&quot; onerror=&quot;alert(1)"' in image
    assert '" onmouseover' not in link and '" onerror' not in image


def test_script_links_are_refused_however_they_are_spelled():
    for source in (
        "<javascript:alert(1)>",
        "[x](&#106;avascript:alert(1))",
        "[x](javascript&#58;alert(1))",
        "[a]: javascript:alert(1)\n\n[a]",
        "![x](vbscript:msgbox(1))",
    ):
        html = render_markdown(source)
        assert "href" not in html and "src" not in html, source


def test_a_long_reply_renders_the_same_text_it_was_given():
    stamps = "".join(f"t={n}\n" for n in range(300))
    html = render_markdown(stamps)
    assert html.startswith("<p>t=0\n") and html.endswith("t=299</p>\n")
    assert html.count("t=") == 300


def test_a_reply_rendered_again_is_remembered_not_parsed_again():
    from chat_app.markdown import _render_remembered

    text = f"**{uuid.uuid4()}** and a [link](https://example.com)"
    first = render_markdown(text)
    hits = _render_remembered.cache_info().hits
    assert render_markdown(text) == first
    assert _render_remembered.cache_info().hits == hits + 1


def test_a_very_long_reply_is_rendered_each_time_and_not_kept():
    from chat_app.markdown import _REMEMBERED_CHARS, _render_remembered

    text = "word " * (_REMEMBERED_CHARS // 5 + 1)
    kept = _render_remembered.cache_info().currsize
    html = render_markdown(text)
    assert html.startswith("<p>word word") and html.count("word") == _REMEMBERED_CHARS // 5 + 1
    assert _render_remembered.cache_info().currsize == kept
