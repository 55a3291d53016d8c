import pytest
from tests.e2e.conftest import login
pytestmark = pytest.mark.e2e

def test_shot(server, page):
    login(page, server, "root")
    page.set_viewport_size({"width": 1440, "height": 1000})
    page.goto(server.url + "/programs/")
    page.fill("[data-testid=new-profile-name]", "research")
    page.press("[data-testid=new-profile-name]", "Enter")
    page.wait_for_selector("[data-testid=profile-heading]:has-text('research')")
    page.locator("[data-testid=catalog-tool][data-tool=web_search] button.tool-name").click()
    page.wait_for_selector("[data-testid=tool-why]")
    page.screenshot(path="/tmp/programs.png", full_page=True)
