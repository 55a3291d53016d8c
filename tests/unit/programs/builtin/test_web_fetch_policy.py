"""A web_fetch host list holds at every redirect hop, not only for the first URL."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from openprogram.programs.builtin.web_fetch import web_fetch
from openprogram.programs.rule_conditions import Condition
from openprogram.programs.rules import PolicySet, Rule
from tests.unit.programs.builtin._web_server import WebTestServer, standard_routes


@pytest.fixture(scope="module")
def server() -> Iterator[WebTestServer]:
    web = WebTestServer()
    standard_routes(web)
    web.routes = {
        **web.routes,
        "/away": lambda h: h.send_body(
            302, b"", None, {"Location": f"http://localhost:{web.port}/text"}
        ),
    }
    web.start()
    yield web
    web.stop()


@pytest.fixture
def only_loopback_ip(server, configure, turn):
    """Both names of the test server reachable; the policy allows only 127.0.0.1."""
    server.requests.clear()
    configure(
        web_fetch_allow_hosts=(f"127.0.0.1:{server.port}", f"localhost:{server.port}"),
        web_fetch_timeout=5.0,
    )
    rule = Rule(
        "web_fetch",
        "deny",
        condition=Condition("host", ("127.0.0.1",), negate=True),
        id=11,
        reason="our hosts only",
    )
    turn.policy = PolicySet(rules=(rule,))
    return server


async def test_a_redirect_to_another_host_is_refused_naming_the_rule(only_loopback_ip, call):
    result = await call(web_fetch, {"url": only_loopback_ip.url("/away")})
    assert result.is_error
    assert "redirect" in result.content and "rule #11" in result.content
    assert "our hosts only" in result.content
    assert [r["path"] for r in only_loopback_ip.requests] == ["/away"]  # /text never fetched


async def test_a_redirect_within_the_allowed_host_is_followed(only_loopback_ip, call):
    result = await call(web_fetch, {"url": only_loopback_ip.url("/redirect-ok")})
    assert not result.is_error and result.content.endswith("plain words")


async def test_the_first_url_is_decided_before_anything_is_fetched(only_loopback_ip, call):
    url = f"http://localhost:{only_loopback_ip.port}/text"
    result = await call(web_fetch, {"url": url})
    assert (
        result.is_error and "refused by policy" in result.content and "rule #11" in result.content
    )
    assert only_loopback_ip.requests == []
