"""URL safety: only public http(s) addresses, whatever spelling the host uses."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openprogram.security.urls import (
    UnsafeURL,
    check_url,
    is_public_address,
    normalise_host,
    parse_allow_entry,
    resolve_public_addresses,
)


@pytest.mark.parametrize(
    "url",
    ["file:///etc/passwd", "ftp://example.com/x", "gopher://example.com/", "data:text/plain,hi"],
)
def test_it_refuses_non_http_schemes(url):
    with pytest.raises(UnsafeURL, match="only http and https"):
        check_url(url)


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("", "empty"),
        ("http://", "no host"),
        ("http://user:pw@example.com/", "credentials"),
        ("http://exa mple.com/", "whitespace"),
        ("http://example.com:99999/", "does not parse|port"),
    ],
)
def test_it_refuses_malformed_urls(url, why):
    with pytest.raises(UnsafeURL, match=why):
        check_url(url)


@pytest.mark.parametrize(
    ("host", "meaning"),
    [
        ("2130706433", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("::ffff:127.0.0.1", "::ffff:7f00:1"),
        ("Example.COM.", "example.com"),
    ],
)
def test_it_normalises_every_host_spelling(host, meaning):
    assert str(normalise_host(host)) == meaning


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/",
        "http://localhost/",
        "http://10.1.2.3/",
        "http://172.16.0.1/",
        "http://192.168.1.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://100.64.0.1/",
        "http://0.0.0.0/",
        "http://224.0.0.1/",
        "http://240.0.0.1/",
        "http://[::1]/",
        "http://[::]/",
        "http://[fc00::1]/",
        "http://[fd12:3456::1]/",
        "http://[fe80::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:169.254.169.254]/",
        "http://[64:ff9b::7f00:1]/",
        "http://[2002:7f00:1::]/",
        "http://[::127.0.0.1]/",
        "http://2130706433/",
        "http://0177.0.0.1/",
        "http://0x7f.1/",
        "http://017700000001/",
    ],
)
def test_it_refuses_private_addresses_after_resolution(url):
    with pytest.raises(UnsafeURL, match="non-public"):
        resolve_public_addresses(check_url(url))


def test_it_accepts_a_public_literal():
    assert resolve_public_addresses(check_url("https://93.184.215.14/")) == [
        ipaddress.ip_address("93.184.215.14")
    ]


def test_the_allow_list_lifts_the_guard_for_that_host_and_port_only():
    allowed = ("127.0.0.1:8123",)
    checked = check_url("http://127.0.0.1:8123/page")
    assert resolve_public_addresses(checked, allow_hosts=allowed) == [
        ipaddress.ip_address("127.0.0.1")
    ]
    with pytest.raises(UnsafeURL):
        resolve_public_addresses(check_url("http://127.0.0.1:8124/"), allow_hosts=allowed)
    with pytest.raises(UnsafeURL):
        resolve_public_addresses(check_url("http://10.0.0.1:8123/"), allow_hosts=allowed)


def test_a_host_only_allow_entry_covers_every_port_and_ipv6_entries_parse():
    assert resolve_public_addresses(check_url("http://127.0.0.1:9/"), allow_hosts=["127.0.0.1"])
    assert resolve_public_addresses(check_url("http://[::1]:8080/"), allow_hosts=["[::1]:8080"])


def test_an_unresolvable_host_is_refused_clearly():
    with pytest.raises(UnsafeURL, match="does not resolve"):
        resolve_public_addresses(check_url("http://no-such-host.invalid/"))


@given(st.ip_addresses(v=4))
def test_any_ipv4_mapped_into_ipv6_is_judged_as_itself(address):
    mapped = ipaddress.IPv6Address(f"::ffff:{address}")
    assert is_public_address(mapped) == is_public_address(address)


@given(st.ip_addresses(v=4))
def test_no_private_ipv4_is_ever_public(address):
    if address.is_private or address.is_loopback or address.is_link_local:
        assert not is_public_address(address)


@pytest.mark.parametrize(
    ("entry", "parsed"),
    [
        ("127.0.0.1:8123", ("127.0.0.1", 8123)),
        ("Intranet.Example", ("intranet.example", None)),
        ("[::1]:8080", ("::1", 8080)),
        ("[::1]", ("::1", None)),
        ("0x7f.1:80", ("127.0.0.1", 80)),
    ],
)
def test_allow_entries_parse(entry, parsed):
    assert parse_allow_entry(entry) == parsed


@pytest.mark.parametrize("entry", ["", "host:99999", "host:http", "[::1", "[::1]x", "a b", "u@h"])
def test_malformed_allow_entries_are_refused(entry):
    with pytest.raises(ValueError, match="allow-list entry"):
        parse_allow_entry(entry)


def test_a_malformed_allow_entry_allows_nothing():
    with pytest.raises(UnsafeURL):
        resolve_public_addresses(check_url("http://127.0.0.1:80/"), allow_hosts=["127.0.0.1:http"])


def test_internationalised_names_become_ascii():
    assert check_url("https://Bücher.example/").host == "xn--bcher-kva.example"
