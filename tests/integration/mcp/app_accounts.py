"""Playing the user and the browser for the per-user account tests (Django test client).

The ``oauth_provider`` and ``notes`` fixtures are in conftest.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from urllib.parse import parse_qs, urlsplit

import httpx2
from django.test import Client
from django.urls import reverse

from tools_app.selectors import resolution_for

from .conftest import WAIT

TOOL = "mcp__notes__whoami"


def wait_until(condition: Callable[[], object]) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def browser_for(user) -> Client:  # type: ignore[no-untyped-def]
    # OAuth 2.1 allows plain-http redirect URIs only on loopback: the app is at 127.0.0.1 here.
    browser = Client(HTTP_HOST="127.0.0.1")
    browser.force_login(user)
    return browser


def start_connect(browser: Client) -> str:
    response = browser.post(reverse("tools:mcp-account-connect", args=["notes"]))
    assert response.status_code == 200, response.content
    return response.context["url"]


def consent(url: str, account: str, decision: str = "allow") -> str:
    """Fill in the provider's consent page; the callback path + query it redirects to."""
    page = httpx2.get(url, timeout=10)
    assert "Allow OpenProgram" in page.text
    fields = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
    answer = httpx2.post(
        url.split("?")[0], data={**fields, "account": account, "decision": decision}, timeout=10
    )
    location = urlsplit(answer.headers["location"])
    assert location.path == reverse("tools:mcp-oauth-callback")
    return f"{location.path}?{location.query}"


def connect(browser: Client, account: str) -> None:
    callback = consent(start_connect(browser), account)
    response = browser.get(callback)
    assert response.status_code == 302


def l4_reason(user, tool: str) -> str | None:  # type: ignore[no-untyped-def]
    resolution = resolution_for(owner=user, profile_name="default")
    for decision in resolution.decisions:
        if decision.name == tool:
            return decision.reason if decision.layer == "L4" and not decision.offered else None
    raise AssertionError(f"{tool} is not in the resolution")
