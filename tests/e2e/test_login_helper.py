"""The browser tests' login() (tests/e2e/conftest.py): the form once per user and server in
a test process, that session reused after; a session the server no longer accepts sends it
back to the form; ``fresh=True`` is a session of the test's own."""

from __future__ import annotations

import pytest
from django.conf import settings

from tests.e2e.conftest import login

pytestmark = pytest.mark.e2e


def _signed_in(browser, server, username: str, **options) -> tuple:
    """A new context signed in by login(): (context, its page, its session key, whether the
    login form was posted)."""
    context = browser.new_context()
    context.set_default_timeout(15_000)
    page = context.new_page()
    posts: list[str] = []
    page.on(
        "request",
        lambda r: posts.append(r.url) if r.method == "POST" and "/login/" in r.url else None,
    )
    login(page, server, username, **options)
    assert page.url == server.url + "/"
    assert page.text_content("[data-testid=username]") == username
    (key,) = (c["value"] for c in context.cookies() if c["name"] == settings.SESSION_COOKIE_NAME)
    return context, page, key, bool(posts)


def test_a_session_is_reused_until_it_ends_and_fresh_gets_its_own(server, browser):
    first, _, key, _ = _signed_in(browser, server, "bob")
    first.close()
    # The same user on the same server: the kept session, no form.
    second, page, reused, posted = _signed_in(browser, server, "bob")
    assert (reused, posted) == (key, False)
    # Logged out, the session is gone: the next login posts the form, a new session.
    page.get_by_role("banner").get_by_role("button", name="Log out").click()
    page.wait_for_url(f"{server.url}/login/*")
    second.close()
    third, _, renewed, posted = _signed_in(browser, server, "bob")
    assert posted and renewed != key
    third.close()
    # fresh: the form, a session of its own, and the kept one is left as it was.
    own, page, separate, posted = _signed_in(browser, server, "bob", fresh=True)
    assert posted and separate != renewed
    page.get_by_role("banner").get_by_role("button", name="Log out").click()
    page.wait_for_url(f"{server.url}/login/*")
    own.close()
    fourth, _, kept, posted = _signed_in(browser, server, "bob")
    assert (kept, posted) == (renewed, False)
    fourth.close()
