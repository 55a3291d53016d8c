"""Per-user MCP accounts with two daphne processes behind one address, in Chromium.

The provider sends the browser back to the address Connect was started on; a
load balancer may hand that callback to any process. Here it goes to the other
one, which finishes the flow from the database; the first process picks the
account up from the database too, and a Disconnect on it (revoked at the
provider) reaches the second. Real OAuth-protected MCP server (tests/fakes).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import Page, Route, expect

from tests.e2e.conftest import login
from tests.e2e.test_mcp_accounts import TOOL, _account, _add_notes_server, _explain
from tests.fakes.oauth_launch import OAuthDemo, oauth_demo
from tests.servers import DaphneServer, another_process, make_server
from tools_app.mcp.account_sync import SYNC_SECONDS

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Iterator[OAuthDemo]:
    with oauth_demo(tmp_path_factory.mktemp("oauth-demo")) as running:
        yield running


@pytest.fixture(scope="module")
def two_sites(tmp_path_factory, demo: OAuthDemo) -> Iterator[tuple[DaphneServer, DaphneServer]]:
    home = tmp_path_factory.mktemp("two-process-home")  # one database, one secret key
    first = make_server(home)
    first.create_users()
    _add_notes_server(first, demo)
    second = another_process(first)
    first.start()
    second.start()
    yield first, second
    first.stop()
    second.stop()


def _until(condition: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.2)


def _offered(page: Page) -> bool:
    # A process whose sessions never listed the server has not registered its tools yet.
    try:
        return _explain(page, TOOL).get("layer") != "L4"
    except StopIteration:
        return False


def test_a_connect_finished_by_the_other_process_reaches_both_and_so_does_disconnect(
    two_sites: tuple[DaphneServer, DaphneServer], demo: OAuthDemo, browser
) -> None:
    first, second = two_sites
    context = browser.new_context()
    context.set_default_timeout(20_000)
    page = context.new_page()
    login(page, first, "alice")  # cookies are per host, not port: the session works on both

    def back_to_the_second(route: Route) -> None:
        # The provider's answer to the consent form sends the browser to the first
        # process's callback; hand it to the second, as a load balancer may.
        if route.request.method != "POST":  # the consent page itself
            route.continue_()
            return
        answer = route.fetch(max_redirects=0)
        target = answer.headers["location"].replace(first.url, second.url, 1)
        assert target.startswith(second.url + "/programs/mcp/oauth/callback/")
        route.fulfill(status=302, headers={"Location": target})

    page.route(re.compile(rf"^{re.escape(demo.base)}/as/authorize"), back_to_the_second)
    page.goto(first.url + "/programs/")
    _account(page).get_by_role("button", name="Connect").click()
    page.get_by_test_id("mcp-oauth-continue").click()
    page.get_by_label("Account").fill("alice-acct")
    page.get_by_role("button", name="Allow").click()

    # The second process finished the flow the first one started.
    # The Programs page then writes its profile into the address (`?profile=`).
    expect(page).to_have_url(re.compile(rf"^{re.escape(second.url)}/programs/(\?profile=[\w-]+)?$"))
    expect(page.locator(".messages")).to_contain_text("Your account for notes is connected.")
    assert _offered(page)
    # The first process learns of the account from the database.
    on_first = context.new_page()
    on_first.goto(first.url + "/programs/")
    _until(lambda: _offered(on_first), SYNC_SECONDS + 45)

    _account(on_first).get_by_role("button", name="Disconnect").click()

    expect(on_first.locator(".messages")).to_contain_text("Disconnected your account for notes.")
    assert [e["hint"] for e in demo.events("revoke")] == ["refresh_token", "access_token"]
    assert not _offered(on_first)
    _until(lambda: not _offered(page), SYNC_SECONDS + 45)
    assert "connect your account" in _explain(page, TOOL)["reason"]
    context.close()
