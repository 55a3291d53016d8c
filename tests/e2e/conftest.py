"""Browser fixtures: a real daphne server and Debian's Chromium driven by Playwright."""

from __future__ import annotations

import os

import pytest
from django.conf import settings

from tests.servers import PASSWORD, make_server

# Playwright's sync API runs its own event loop; Django must allow sync DB access
# in fixtures that run beside it.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    srv = make_server(tmp_path_factory.mktemp("e2e-home"))
    srv.create_users()
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def browser():
    # Module scope: Playwright's sync API keeps an event loop running in the main
    # thread while it is open, which would break every later test that calls
    # asyncio.run(); closing it after each module keeps the rest of the suite clean.
    from playwright.sync_api import expect, sync_playwright

    # expect() waits 5 s by default, whatever a context's default timeout: on a loaded
    # 2-core CI machine a page that normally updates in 100 ms may need far longer.
    # Waiting is free when the condition comes early.
    expect.set_options(timeout=15_000)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context()
    context.set_default_timeout(15_000)
    pg = context.new_page()
    yield pg
    context.close()


# The session and CSRF cookies of a form login, per (server address, server home, username),
# in this worker process: a later login() of the same user on the same server reuses them
# instead of posting the form again (the servers hash as production does, ~0.7 s of server
# CPU a login, and the form page costs the browser as much again). Nothing else the app
# sets is kept; the session itself holds only the login (no view writes to it but single
# sign-on's, whose tests sign in through their provider).
_SESSIONS: dict[tuple[str, str, str], list[dict]] = {}


def login(page, server, username: str = "alice", *, fresh: bool = False) -> None:
    """Sign ``page``'s context in as ``username``; it ends on the chat landing page ``/``.

    The session of this worker's earlier login of the same user on the same server is
    reused when the server still accepts it; a session that is gone (logged out, a changed
    password, another server on a reused port) lands on /login/, and the form signs in
    again. ``fresh``: a form login whose session is the test's own, neither reused nor
    kept, for a test that ends or changes its session (logout, revocation).
    """
    key = (server.url, str(server.home), username)
    kept = None if fresh else _SESSIONS.get(key)
    if kept:
        page.context.add_cookies(kept)
        page.goto(server.url + "/")
        # A session the server no longer knows is sent to /login/?next=/.
        if page.url == server.url + "/" and _signed_in_as(page) == username:
            return
        del _SESSIONS[key]
    _form_login(page, server, username)
    assert _signed_in_as(page) == username, f"the login form did not sign {username} in"
    if not fresh:
        kept_names = (settings.SESSION_COOKIE_NAME, settings.CSRF_COOKIE_NAME)
        cookies = page.context.cookies(server.url)
        _SESSIONS[key] = [c for c in cookies if c["name"] in kept_names]


def _form_login(page, server, username: str) -> None:
    # A login on top of a kept session would end it (Django flushes or re-keys the session
    # a login starts from): the form starts without a session cookie of the cache.
    name = settings.SESSION_COOKIE_NAME
    kept = {c["value"] for cookies in _SESSIONS.values() for c in cookies if c["name"] == name}
    for cookie in page.context.cookies(server.url):
        if cookie["name"] == name and cookie["value"] in kept:
            page.context.clear_cookies(name=name, domain=cookie["domain"])
    page.goto(server.url + "/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")


def _signed_in_as(page) -> str | None:
    """The username the page's top bar shows."""
    # Attached, not visible: on a phone the chat page's top bar gives way to its drawer.
    return page.wait_for_selector("[data-testid=username]", state="attached").text_content()


def open_new_conversation(page, server=None) -> str:
    """Create a conversation for the logged-in user (API) and open it; returns its URL.

    The "+ New chat" link opens the landing page, which creates a conversation only when
    its first message is sent; tests that start from an empty conversation use this.
    """
    base = server.url if server is not None else page.url.split("/", 3)[:3]
    base = base if isinstance(base, str) else "/".join(base)
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    response = page.request.post(
        base + "/api/conversations",
        headers={"X-CSRFToken": token, "Content-Type": "application/json"},
        data={},
    )
    assert response.status == 201, response.text()
    url = f"{base}/c/{response.json()['id']}/"
    page.goto(url)
    page.wait_for_selector("#connection[data-state=open]")
    return url


VIEWPORTS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}


@pytest.fixture(params=sorted(VIEWPORTS))
def sized_page(browser, request):
    """A page at 1280x800 ("desktop") and again at 390x844 ("phone"); ``.size`` names it."""
    phone = request.param == "phone"
    context = browser.new_context(
        viewport=VIEWPORTS[request.param], is_mobile=phone, has_touch=phone, device_scale_factor=1
    )
    context.set_default_timeout(15_000)
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    pg = context.new_page()
    pg.size = request.param
    yield pg
    context.close()
