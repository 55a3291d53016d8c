"""URL safety for server-side fetches: only public http(s) addresses, checked after DNS.

Contract, step by step (:func:`check_url` then :func:`resolve_public_addresses`):

1. The URL must parse, use ``http`` or ``https``, name a host, carry no user:password,
   and its port (explicit, or 80/443 by scheme) must be in 1..65535. Anything else —
   ``file:``, ``ftp:``, ``gopher:``, ``data:`` — is refused.
2. The host is normalised: an IPv6 literal is parsed by :mod:`ipaddress`; an IPv4
   literal is read with :func:`socket.inet_aton` semantics, so every spelling a resolver
   would accept (decimal ``2130706433``, octal ``0177.0.0.1``, hex ``0x7f.1``, short
   ``127.1``) becomes the address it really means. Other hosts are names, lower-cased.
3. Names are resolved with :func:`socket.getaddrinfo`; literals resolve to themselves.
4. EVERY resolved address must be public. Refused: loopback, RFC 1918, link-local
   (including the cloud metadata address 169.254.169.254), CGNAT 100.64.0.0/10,
   multicast, unspecified, reserved/documentation/benchmark ranges, IPv6 ``::1``,
   ``fc00::/7``, ``fe80::/10``, site-local, and any IPv4 address embedded in IPv6
   (IPv4-mapped ``::ffff:a.b.c.d``, IPv4-compatible, NAT64 ``64:ff9b::/96``, 6to4,
   Teredo) is judged as that IPv4 address.
5. An allow-list entry ``host`` or ``host:port`` (``[v6]:port`` for IPv6) lifts the
   private-address rule for exactly that host (and port, when given) — used for an
   intranet service or a test server on loopback. Scheme rules still apply.
6. The caller connects to one of the returned, checked addresses (pinning it), so a
   second DNS answer cannot swap in a private address (DNS rebinding). Every redirect
   hop goes through steps 1-6 again.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

__all__ = [
    "CheckedURL",
    "IPAddress",
    "UnsafeURL",
    "check_url",
    "host_is_allowed",
    "is_public_address",
    "normalise_host",
    "parse_allow_entry",
    "resolve_public_addresses",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Scheme = Literal["http", "https"]

_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")
_CGNAT = ipaddress.IPv4Network("100.64.0.0/10")


class UnsafeURL(ValueError):
    """A URL was refused before any connection was made."""


@dataclass(frozen=True)
class CheckedURL:
    url: str
    scheme: Scheme
    host: str
    """Lower-cased name, or the canonical text of an IP literal."""
    port: int
    ip_literal: IPAddress | None


def normalise_host(host: str) -> str | IPAddress:
    """An IP address for any literal spelling, else the lower-cased name."""
    bare = host.strip("[]")
    try:
        return ipaddress.ip_address(bare)
    except ValueError:
        pass
    if host and all(c in "0123456789abcdefxABCDEFX." for c in host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            pass
    return host.lower().rstrip(".")


def check_url(url: str) -> CheckedURL:
    """Steps 1-2: parse and normalise, refusing anything but plain http(s) URLs."""
    if not isinstance(url, str) or not url.strip():
        raise UnsafeURL("the URL is empty")
    if any(c in url for c in "\x00\r\n\t ") or any(ord(c) < 32 for c in url):
        raise UnsafeURL(f"the URL {url!r} contains whitespace or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UnsafeURL(f"the URL {url!r} does not parse: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme != "http" and scheme != "https":
        raise UnsafeURL(f"the URL {url!r} uses scheme {scheme!r}; only http and https are fetched")
    if parts.username is not None or parts.password is not None:
        raise UnsafeURL(f"the URL {url!r} carries credentials; they are not sent")
    if not parts.hostname:
        raise UnsafeURL(f"the URL {url!r} has no host")
    if port is None:
        port = 443 if scheme == "https" else 80
    if not 0 < port < 65536:
        raise UnsafeURL(f"the URL {url!r} has port {port}, outside 1..65535")
    host = normalise_host(parts.hostname)
    if isinstance(host, str):
        try:
            # Internationalised names travel as ASCII (punycode) in DNS, Host and SNI.
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise UnsafeURL(f"the URL {url!r} has an invalid host name") from None
        return CheckedURL(url, scheme, host, port, None)
    return CheckedURL(url, scheme, str(host), port, host)


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in _NAT64 or address in _NAT64_LOCAL:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if int(address) >> 32 == 0:
        # IPv4-compatible ::a.b.c.d (deprecated, still routed to a.b.c.d by some stacks).
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def is_public_address(address: IPAddress) -> bool:
    """True only for a globally routable unicast address (step 4)."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.teredo is not None:
            return False
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            return is_public_address(embedded)
        if address.is_site_local:
            return False
    elif address in _CGNAT:
        return False
    return address.is_global and not (
        address.is_multicast
        or address.is_loopback
        or address.is_link_local
        or address.is_private
        or address.is_reserved
        or address.is_unspecified
    )


def parse_allow_entry(entry: str) -> tuple[str, int | None]:
    """``host``, ``host:port`` or ``[v6]:port`` → (normalised host, port or None)."""
    text = entry.strip().lower()
    port_text = ""
    if text.startswith("["):
        host, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise ValueError(f"allow-list entry {entry!r} is not host, host:port or [v6]:port")
        port_text = rest[1:]
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    else:
        host = text
    if not host or any(c in host for c in "/@ \t"):
        raise ValueError(f"allow-list entry {entry!r} has no usable host")
    if port_text == "":
        return str(normalise_host(host)), None
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"allow-list entry {entry!r} has a port outside 1..65535")
    return str(normalise_host(host)), int(port_text)


def host_is_allowed(checked: CheckedURL, allow_hosts: Iterable[str]) -> bool:
    """Step 5: does an allow-list entry lift the private-address rule for this URL?"""
    for entry in allow_hosts:
        try:
            host, port = parse_allow_entry(entry)
        except ValueError:
            continue  # hosts validate their settings at start-up; a bad entry allows nothing
        if host == checked.host and port in (None, checked.port):
            return True
    return False


def resolve_public_addresses(
    checked: CheckedURL, *, allow_hosts: Iterable[str] = ()
) -> list[IPAddress]:
    """Steps 3-5: the addresses to connect to, every one of them checked."""
    if checked.ip_literal is not None:
        addresses: list[IPAddress] = [checked.ip_literal]
    else:
        try:
            infos = socket.getaddrinfo(checked.host, checked.port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as exc:
            raise UnsafeURL(f"the host {checked.host!r} does not resolve: {exc}") from None
        addresses = []
        for info in infos:
            address = ipaddress.ip_address(str(info[4][0]).split("%")[0])
            if address not in addresses:
                addresses.append(address)
        if not addresses:
            raise UnsafeURL(f"the host {checked.host!r} resolved to no address")
    if host_is_allowed(checked, allow_hosts):
        return addresses
    private = [str(a) for a in addresses if not is_public_address(a)]
    if private:
        raise UnsafeURL(
            f"the host {checked.host!r} resolves to a non-public address ({', '.join(private)}); "
            "loopback, private, link-local and metadata addresses are never fetched"
        )
    return addresses
