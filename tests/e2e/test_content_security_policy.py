"""Every page works under the Content-Security-Policy in Chromium, with no violation.

Violations are collected two ways: a ``securitypolicyviolation`` listener installed
before any page script runs, and Chromium's console errors that mention the policy.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page

from tests.e2e.conftest import login, open_new_conversation

pytestmark = pytest.mark.e2e

_LISTEN = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push(`${e.violatedDirective} blocked ${e.blockedURI || "inline"}`
    + ` at ${e.sourceFile || document.location.pathname}:${e.lineNumber}`);
});
"""


@pytest.fixture
def watched(page: Page) -> tuple[Page, list[str]]:
    """The page, and the console's CSP complaints as they arrive."""
    console: list[str] = []
    page.context.add_init_script(_LISTEN)
    page.on(
        "console",
        lambda m: console.append(m.text) if "Content Security Policy" in m.text else None,
    )
    return page, console


def _violations(page: Page, console: list[str]) -> list[str]:
    return [*page.evaluate("window.__cspViolations || []"), *console]


def _visit(page: Page, console: list[str], url: str) -> None:
    response = page.goto(url)
    assert response is not None and response.ok, url
    assert "script-src 'self'" in response.headers["content-security-policy"]
    page.wait_for_load_state("networkidle")
    assert _violations(page, console) == [], url


def test_the_login_page_passes_the_policy(server, watched):
    page, console = watched
    _visit(page, console, server.url + "/login/")


def test_a_chat_turn_runs_under_the_policy(server, watched):
    page, console = watched
    login(page, server, "alice")
    open_new_conversation(page, server)
    page.fill("#composer-text", "/list_dir path=.")
    page.press("#composer-text", "Enter")
    page.wait_for_selector(".run:last-child[data-status=completed] .run-status", timeout=40_000)
    page.reload()
    page.wait_for_selector("#connection[data-state=open]")
    assert _violations(page, console) == []


def test_the_programs_page_and_its_htmx_swaps_pass_the_policy(server, watched):
    page, console = watched
    login(page, server, "alice")
    _visit(page, console, server.url + "/programs/")
    page.locator("button.tool-name").first.click()
    page.wait_for_selector("#tool-detail :first-child")
    assert _violations(page, console) == []


def test_the_usage_and_api_docs_pages_pass_the_policy(server, watched):
    page, console = watched
    login(page, server, "alice")
    _visit(page, console, server.url + "/usage/")
    _visit(page, console, server.url + "/api/docs")
    page.wait_for_selector("#swagger-ui .opblock")


def test_the_admin_pages_pass_the_policy(server, watched):
    page, console = watched
    login(page, server, "root")
    for path in ("/admin/", "/admin/auth/user/", "/admin/auth/user/1/change/"):
        _visit(page, console, server.url + path)


def test_the_policy_is_enforced_and_a_violation_would_be_seen(server, watched):
    page, console = watched
    _visit(page, console, server.url + "/login/")
    page.evaluate(
        """() => {
          document.body.insertAdjacentHTML("beforeend", '<p id="styled" style="color: red">x</p>');
          const s = document.createElement("script");
          s.textContent = "window.__inlineRan = true";
          document.body.appendChild(s);
        }"""
    )
    page.wait_for_function("window.__cspViolations.length >= 2")
    assert page.evaluate("window.__inlineRan === undefined")
    assert page.eval_on_selector("#styled", "e => getComputedStyle(e).color") != "rgb(255, 0, 0)"
    directives = " ".join(_violations(page, console))
    assert "style-src" in directives and "script-src" in directives
