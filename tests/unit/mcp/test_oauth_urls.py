"""Which URLs OAuth for MCP servers accepts, and when two URLs share an origin."""

from __future__ import annotations

import pytest

from openprogram.mcp.oauth_urls import is_loopback_host, origin_of, origin_url, secure_url


@pytest.mark.parametrize(
    "url",
    [
        "https://as.example.com/token",
        "http://localhost:8080/cb",
        "http://127.0.0.1/x",
        "http://[::1]/",
    ],
)
def test_https_and_loopback_http_are_secure(url: str) -> None:
    assert secure_url(url)


@pytest.mark.parametrize(
    "url",
    ["http://as.example.com/token", "http://localhost.evil.example/", "ftp://127.0.0.1/", "/token"],
)
def test_plain_http_elsewhere_and_other_schemes_are_not(url: str) -> None:
    assert not secure_url(url)


def test_only_localhost_and_loopback_addresses_are_loopback() -> None:
    assert is_loopback_host("localhost") and is_loopback_host("127.0.0.2")
    assert not is_loopback_host("10.0.0.1") and not is_loopback_host(None)


def test_a_default_port_written_out_is_the_same_origin() -> None:
    assert origin_of("https://AS.example.com:443/a") == origin_of("https://as.example.com/b")
    assert origin_of("https://as.example.com:8443/") != origin_of("https://as.example.com/")
    assert origin_of("http://as.example.com/") != origin_of("https://as.example.com/")


def test_an_origin_is_written_without_its_default_port() -> None:
    assert origin_url("https://mcp.example.com:443/mcp") == "https://mcp.example.com"
    assert origin_url("http://127.0.0.1:8123/mcp") == "http://127.0.0.1:8123"
