import re

import pytest

from tests.e2e.conftest import login

pytestmark = pytest.mark.e2e


def test_printed_login_link_logs_the_admin_in_once(server, page):
    # The fixture's superuser "root" exists, so the link logs in as that administrator.
    link = server.manage("login_link", "--port", str(server.port)).strip().splitlines()[-1]
    assert re.fullmatch(rf"http://127\.0\.0\.1:{server.port}/login/token/[\w-]+/", link)
    page.goto(link)
    page.wait_for_selector("[data-testid=username]")
    assert page.text_content("[data-testid=username]") == "root"
    page.click("text=Log out")
    page.wait_for_url(re.compile(r".*/logout/|.*/login/.*"))
    page.goto(link)
    assert "already used" in page.content()


def test_navigation_between_chat_programs_and_logout(server, page):
    login(page, server, "alice", fresh=True)  # its own session: the test logs it out
    page.click("nav >> text=Programs")
    page.wait_for_url(re.compile(r".*/programs/$"))
    page.click("nav >> text=Chat")
    page.wait_for_url(re.compile(rf"{server.url}/.*"))
    assert page.locator("nav >> text=Admin").count() == 0
    page.click("text=Log out")
    page.goto(server.url + "/programs/")
    assert "/login/" in page.url


def test_staff_sees_the_admin_link(server, page):
    login(page, server, "root")
    page.click("nav >> text=Admin")
    page.wait_for_selector("#site-name")
    assert "OpenProgram administration" in page.content()
