"""Two daphne processes sharing Redis: a turn runs in one, a tab on the other steers it.

Events reach the other process's tabs through the Redis channel layer; approvals and
Stop sent from there travel the conversation's control group back to the process
that owns the turn.
"""

from __future__ import annotations

import time

import pytest

from tests.e2e.conftest import login, open_new_conversation
from tests.servers import another_process, make_server, redis_server

pytestmark = [pytest.mark.e2e, pytest.mark.redis]


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    with redis_server(tmp_path_factory.mktemp("redis"), db=1) as url:
        yield url


@pytest.fixture(scope="module")
def two_servers(tmp_path_factory, redis_url):
    home = tmp_path_factory.mktemp("scaleout-home")
    first = make_server(home, REDIS_URL=redis_url)
    first.create_users()
    second = another_process(first)
    first.start()
    second.start()
    yield first, second
    first.stop()
    second.stop()


def _open_in_both(browser, two_servers):
    first, second = two_servers
    context = browser.new_context()
    context.set_default_timeout(20_000)
    a = context.new_page()
    login(a, first, "alice")
    path = open_new_conversation(a, first).split(str(first.port), 1)[1]
    # Cookies are per host, not per port: the session works on the second process too.
    b = context.new_page()
    b.goto(second.url + path)
    for page in (a, b):
        page.wait_for_selector("#connection[data-state=open]")
    return context, a, b


def test_an_approval_from_another_process_reaches_the_turn(browser, two_servers):
    context, a, b = _open_in_both(browser, two_servers)
    a.fill("#composer-text", "/bash echo across-processes")
    a.press("#composer-text", "Enter")
    b.locator(".tool-card[data-status=awaiting_approval] button.approve").click()
    a.wait_for_selector(".tool-card[data-status=done]", timeout=40_000)
    assert "across-processes" in a.locator(".tool-card .tool-result").text_content()
    b.wait_for_selector(".run[data-status=completed] .run-status")
    context.close()


def test_stop_from_another_process_stops_the_turn(browser, two_servers):
    context, a, b = _open_in_both(browser, two_servers)
    a.fill("#composer-text", "/bash sleep 30")
    a.press("#composer-text", "Enter")
    b.locator(".tool-card[data-status=awaiting_approval] button.approve").click()
    b.wait_for_selector(".tool-card[data-status=running]")
    b.click("#stop")
    # Well before the 30 s sleep ends, with room for two servers on a loaded machine.
    a.wait_for_selector(".run[data-status=stopped] .run-status", timeout=20_000)
    b.wait_for_selector(".run[data-status=stopped] .run-status", timeout=20_000)
    context.close()


@pytest.fixture
def crashable_servers(tmp_path_factory, redis_url):
    """Two processes with a 2-second run lease; the test kills the first one."""
    home = tmp_path_factory.mktemp("crash-home")
    first = make_server(home, REDIS_URL=redis_url, OPENPROGRAM_RUN_LEASE_SECONDS="2")
    first.create_users()
    second = another_process(first)
    first.start()
    second.start()
    yield first, second
    first.stop()
    second.stop()


def _wait_until(check, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.1)


def test_a_turn_left_by_a_crashed_process_stops_blocking_its_conversation(
    browser, crashable_servers
):
    first, second = crashable_servers
    context, a, b = _open_in_both(browser, crashable_servers)
    a.fill("#composer-text", "/bash echo never-approved")
    a.press("#composer-text", "Enter")
    # The first turn of a process loads litellm: slow on a loaded machine.
    b.wait_for_selector(".tool-card[data-status=awaiting_approval]", timeout=40_000)
    conversation_id = a.url.rstrip("/").rsplit("/", 1)[1]
    first.proc.kill()  # a hard crash: no clean-up runs in that process
    first.proc.wait(timeout=10)

    def orphan_closed() -> bool:
        runs = b.request.get(f"{second.url}/api/conversations/{conversation_id}/runs").json()
        return runs[0]["status"] == "error"

    # The dead process stopped renewing the lease; the next touch closes the run.
    _wait_until(orphan_closed)
    b.reload()
    b.wait_for_selector("#connection[data-state=open]")
    assert "the server running this turn stopped" in b.locator(".run-error").inner_text()
    b.fill("#composer-text", "Which tools can you use?")
    b.press("#composer-text", "Enter")
    b.wait_for_selector(".run:last-child[data-status=completed] .run-status", timeout=40_000)
    assert b.locator(".run").count() == 2
    context.close()
