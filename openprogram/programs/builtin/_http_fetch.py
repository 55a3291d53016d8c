"""A GET that only ever talks to checked public addresses, with hard size and time caps.

Each hop (the first URL and every redirect, at most ``max_redirects``) is checked by
:mod:`openprogram.security.urls`, its host resolved and every address vetted; a
redirect is also decided again by the team policy (``call_rules.redirect_refusal``:
a host list that allowed the first URL must allow every hop), and the
connection is made to that vetted address (pinned): the URL's host stays in the
``Host`` header and in TLS SNI/certificate checks, so a DNS answer that changes
between the check and the connect (rebinding) is never used. Proxies from the
environment are ignored for the same reason.

The body is read raw and decompressed here, never by the HTTP library, so the cap
applies to decompressed bytes as they are produced: a gzip bomb stops at the cap
instead of inflating in memory.
"""

from __future__ import annotations

import asyncio
import codecs
import functools
import re
import ssl
import zlib
from dataclasses import dataclass
from email.message import Message
from typing import Literal
from urllib.parse import urljoin, urlsplit, urlunsplit

import certifi
import httpx

from openprogram.programs.call_rules import redirect_refusal
from openprogram.security.urls import (
    CheckedURL,
    IPAddress,
    UnsafeURL,
    check_url,
    resolve_public_addresses,
)

__all__ = ["FetchFailed", "FetchedPage", "fetch_public", "tls_context"]

TextKind = Literal["html", "text"]
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_TEXT_TYPES = frozenset(
    {"application/json", "application/xml", "application/javascript", "application/x-ndjson"}
)
_META_CHARSET = re.compile(rb"""<meta[^>]+charset=["']?([A-Za-z0-9_.:-]+)""", re.IGNORECASE)
_USER_AGENT = "OpenProgram-web_fetch/1.0 (+https://github.com/openprogram)"


@functools.cache
def tls_context() -> ssl.SSLContext:
    """One verifying TLS context (certifi's roots) for every fetch: building one costs ~50 ms."""
    return ssl.create_default_context(cafile=certifi.where())


class FetchFailed(Exception):
    """The fetch was refused or failed; the message says why and what to do."""


@dataclass(frozen=True)
class FetchedPage:
    url: str
    """The final URL, after redirects."""
    status: int
    reason: str
    media_type: str
    kind: TextKind
    text: str


def _media_kind(media_type: str) -> TextKind | None:
    if media_type in {"text/html", "application/xhtml+xml"}:
        return "html"
    if media_type.startswith("text/") or media_type in _TEXT_TYPES:
        return "text"
    if media_type.startswith("application/") and media_type.endswith(("+json", "+xml")):
        return "text"
    return None


def _content_type(response: httpx.Response) -> tuple[str, str | None]:
    """``(media type, charset)``; an empty media type when the header is missing."""
    raw = response.headers.get("content-type")
    if raw is None:
        return "", None
    message = Message()
    message["content-type"] = raw
    charset = message.get_param("charset")
    return message.get_content_type(), charset if isinstance(charset, str) else None


class _CappedDecoder:
    """Decompresses ``Content-Encoding`` incrementally, refusing output beyond ``limit``."""

    def __init__(self, encoding: str, limit: int) -> None:
        encoding = encoding.strip().lower()
        if encoding in {"", "identity"}:
            self._inflater = None
        elif encoding in {"gzip", "x-gzip", "deflate"}:
            # 32 + MAX_WBITS auto-detects gzip and zlib headers.
            self._inflater = zlib.decompressobj(32 + zlib.MAX_WBITS)
        else:
            raise FetchFailed(f"the server used content encoding {encoding!r}, which is not read")
        self._limit = limit
        self._chunks: list[bytes] = []
        self.size = 0

    def _keep(self, data: bytes) -> None:
        self.size += len(data)
        if self.size > self._limit:
            raise FetchFailed(
                f"the response body is larger than the {self._limit:,}-byte cap "
                "(after decompression); fetch a smaller page or a more specific URL"
            )
        self._chunks.append(data)

    def feed(self, raw: bytes) -> None:
        if self._inflater is None:
            self._keep(raw)
            return
        try:
            data = self._inflater.decompress(raw, self._limit - self.size + 1)
            self._keep(data)
            while self._inflater.unconsumed_tail:
                tail = self._inflater.unconsumed_tail
                self._keep(self._inflater.decompress(tail, self._limit - self.size + 1))
        except zlib.error as exc:
            raise FetchFailed(f"the compressed response body is corrupt: {exc}") from None

    def body(self) -> bytes:
        return b"".join(self._chunks)


def _decode(body: bytes, charset: str | None, kind: TextKind) -> str:
    if charset is None and kind == "html":
        match = _META_CHARSET.search(body[:4096])
        charset = match.group(1).decode("ascii") if match else None
    try:
        codec = codecs.lookup(charset or "utf-8").name
    except LookupError:
        codec = "utf-8"
    return body.decode(codec, errors="replace")


def _pinned_url(checked: CheckedURL, address: IPAddress) -> str:
    parts = urlsplit(checked.url)
    host = f"[{address}]" if address.version == 6 else str(address)
    return urlunsplit(
        (checked.scheme, f"{host}:{checked.port}", parts.path or "/", parts.query, "")
    )


def _host_header(checked: CheckedURL) -> str:
    host = f"[{checked.host}]" if ":" in checked.host else checked.host
    default = 443 if checked.scheme == "https" else 80
    return host if checked.port == default else f"{host}:{checked.port}"


async def _open(
    client: httpx.AsyncClient, checked: CheckedURL, addresses: list[IPAddress]
) -> httpx.Response:
    last_error: Exception | None = None
    for address in addresses:
        request = client.build_request(
            "GET",
            _pinned_url(checked, address),
            headers={"Host": _host_header(checked)},
            extensions={"sni_hostname": checked.host} if checked.scheme == "https" else {},
        )
        try:
            return await client.send(request, stream=True)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            last_error = exc
    raise FetchFailed(f"could not connect to {checked.host!r}: {last_error}")


async def _read_body(response: httpx.Response, *, max_bytes: int) -> bytes:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise FetchFailed(
            f"the response body is {int(declared):,} bytes, over the {max_bytes:,}-byte cap"
        )
    decoder = _CappedDecoder(response.headers.get("content-encoding", ""), max_bytes)
    async for raw in response.aiter_raw():
        decoder.feed(raw)
    return decoder.body()


async def _fetch(
    url: str, *, allow_hosts: tuple[str, ...], max_bytes: int, max_redirects: int, timeout: float
) -> FetchedPage:
    async with httpx.AsyncClient(
        follow_redirects=False,
        trust_env=False,
        verify=tls_context(),
        timeout=httpx.Timeout(timeout),
        headers={
            "User-Agent": _USER_AGENT,
            "Accept": "text/html,application/xhtml+xml,text/plain,application/json;q=0.9,*/*;q=0.1",
            "Accept-Encoding": "gzip, deflate",
        },
    ) as client:
        for hop in range(max_redirects + 1):
            try:
                checked = check_url(url)
                refusal = redirect_refusal(url) if hop else None
                if refusal is not None:
                    raise UnsafeURL(refusal)
                addresses = await asyncio.to_thread(
                    resolve_public_addresses, checked, allow_hosts=allow_hosts
                )
            except UnsafeURL as exc:
                if hop == 0:
                    raise
                raise UnsafeURL(f"a redirect to {url!r} was refused: {exc}") from None
            response = await _open(client, checked, addresses)
            try:
                location = response.headers.get("location")
                if response.status_code in _REDIRECTS and location:
                    url = urljoin(url, location)
                    continue
                media_type, charset = _content_type(response)
                kind = _media_kind(media_type) if media_type else "text"
                if kind is None:
                    raise FetchFailed(
                        f"{url!r} returned content type {media_type!r}; web_fetch reads only "
                        "HTML, plain text, JSON and XML"
                    )
                body = await _read_body(response, max_bytes=max_bytes)
            finally:
                await response.aclose()
            if not media_type and b"\x00" in body[:4096]:
                raise FetchFailed(f"{url!r} returned binary data without a content type")
            return FetchedPage(
                url=url,
                status=response.status_code,
                reason=response.reason_phrase,
                media_type=media_type or "text/plain",
                kind=kind,
                text=_decode(body, charset, kind),
            )
    raise FetchFailed(f"stopped after {max_redirects} redirects; the last one pointed to {url!r}")


async def fetch_public(
    url: str,
    *,
    allow_hosts: tuple[str, ...] = (),
    max_bytes: int = 2_000_000,
    max_redirects: int = 5,
    timeout: float = 20.0,
) -> FetchedPage:
    """GET ``url`` following at most ``max_redirects`` redirects, every hop checked."""
    try:
        async with asyncio.timeout(timeout):
            return await _fetch(
                url,
                allow_hosts=allow_hosts,
                max_bytes=max_bytes,
                max_redirects=max_redirects,
                timeout=timeout,
            )
    except TimeoutError:
        raise FetchFailed(f"fetching {url!r} took longer than {timeout:g} s") from None
    except httpx.HTTPError as exc:
        raise FetchFailed(f"fetching {url!r} failed: {type(exc).__name__}: {exc}") from None
