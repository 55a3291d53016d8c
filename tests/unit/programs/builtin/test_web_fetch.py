"""web_fetch against a real server on 127.0.0.1, allow-listed for these tests only."""

from __future__ import annotations

import ssl
import threading
import tracemalloc
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import ThreadingHTTPServer

import pytest

from openprogram.programs.builtin.web_fetch import web_fetch
from tests.unit.programs.builtin._web_server import WebTestServer, standard_routes


@pytest.fixture(scope="module")
def server() -> Iterator[WebTestServer]:
    web = WebTestServer()
    standard_routes(web)
    web.start()
    yield web
    web.stop()


@pytest.fixture
def allowed(server: WebTestServer, configure) -> WebTestServer:
    """The test server, with the private-address guard lifted for its host:port only."""
    server.requests.clear()
    configure(web_fetch_allow_hosts=(f"127.0.0.1:{server.port}",), web_fetch_timeout=5.0)
    return server


@pytest.fixture
def guarded(server: WebTestServer) -> WebTestServer:
    """The test server with no allow-list: it must never be contacted."""
    server.requests.clear()
    return server


async def test_html_becomes_readable_text(allowed, call):
    result = await call(web_fetch, {"url": allowed.url("/page.html")})
    assert not result.is_error
    assert "Test page" in result.content and "# Welcome" in result.content
    assert f"the docs ({allowed.url('/doc')})" in result.content
    assert "var secret" not in result.content and "color:red" not in result.content
    assert "Menu Home About" not in result.content
    assert result.details["status"] == 200


async def test_text_and_json_come_back_as_they_are(allowed, call):
    text = await call(web_fetch, {"url": allowed.url("/text")})
    assert text.content.endswith("\n\nplain words")
    data = await call(web_fetch, {"url": allowed.url("/json")})
    assert data.content.endswith('{"a": 1}') and "application/json" in data.content


async def test_the_declared_charset_is_honoured(allowed, call):
    result = await call(web_fetch, {"url": allowed.url("/latin1")})
    assert result.content.endswith("café")


async def test_a_small_gzip_body_is_decoded(allowed, call):
    result = await call(web_fetch, {"url": allowed.url("/gzip-small")})
    assert result.content.endswith("squeezed text")


async def test_other_content_types_are_refused_clearly(allowed, call):
    result = await call(web_fetch, {"url": allowed.url("/image")})
    assert result.is_error and "'image/png'" in result.content


async def test_an_http_error_status_is_an_error_result_with_the_body(allowed, call):
    result = await call(web_fetch, {"url": allowed.url("/missing")})
    assert result.is_error and "404" in result.content and "gone away" in result.content


async def test_it_connects_to_the_checked_address_with_the_original_host_header(
    allowed, configure, call
):
    configure(web_fetch_allow_hosts=(f"localhost:{allowed.port}",))
    result = await call(web_fetch, {"url": f"http://localhost:{allowed.port}/echo-host"})
    assert result.content.endswith(f"localhost:{allowed.port}")


async def test_same_host_redirects_are_followed(allowed, call):
    result = await call(web_fetch, {"url": allowed.url("/redirect-ok")})
    assert (
        result.content.endswith("plain words") and f"URL: {allowed.url('/text')}" in result.content
    )


async def test_a_redirect_to_a_private_address_is_refused(allowed, call):
    result = await call(web_fetch, {"url": allowed.url("/redirect-private")})
    assert result.is_error and "redirect" in result.content and "169.254.169.254" in result.content


async def test_redirect_loops_stop_after_five_hops(allowed, call):
    result = await call(web_fetch, {"url": allowed.url("/redirect-loop")})
    assert result.is_error and "5 redirects" in result.content
    assert len(allowed.requests) == 6


async def test_an_oversized_body_is_refused(allowed, call):
    announced = await call(web_fetch, {"url": allowed.url("/big")})
    assert announced.is_error and "cap" in announced.content
    streamed = await call(web_fetch, {"url": allowed.url("/big-unannounced")})
    assert streamed.is_error and "larger than the 2,000,000-byte cap" in streamed.content


async def test_a_gzip_bomb_is_stopped_without_inflating_it(allowed, call):
    tracemalloc.start()
    try:
        result = await call(web_fetch, {"url": allowed.url("/gzip-bomb")})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.is_error and "after decompression" in result.content
    assert peak < 30_000_000, f"peak Python memory {peak:,} bytes"


async def test_a_slow_server_hits_the_time_cap(allowed, configure, call):
    configure(web_fetch_timeout=0.5)
    result = await call(web_fetch, {"url": allowed.url("/stall")})
    assert result.is_error and "longer than 0.5 s" in result.content


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "localhost", "2130706433", "0177.0.0.1", "0x7f.1", "127.1", "[::ffff:127.0.0.1]"],
)
async def test_loopback_in_any_spelling_is_refused_without_contact(guarded, call, host):
    result = await call(web_fetch, {"url": f"http://{host}:{guarded.port}/text"})
    assert result.is_error and "non-public" in result.content
    assert guarded.requests == []


async def test_the_allow_list_covers_only_that_port(allowed, configure, call):
    configure(web_fetch_allow_hosts=(f"127.0.0.1:{allowed.port + 1}",))
    result = await call(web_fetch, {"url": allowed.url("/text")})
    assert result.is_error and allowed.requests == []


@pytest.mark.parametrize(
    "url",
    [
        "http://10.0.0.1/",
        "http://172.16.5.4/",
        "http://192.168.0.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://100.64.1.1/",
        "http://[::1]/",
        "http://[fd00::1]/",
        "http://[fe80::1]/",
    ],
)
async def test_private_and_metadata_addresses_are_refused(call, url):
    result = await call(web_fetch, {"url": url})
    assert result.is_error and "non-public" in result.content


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "ftp://example.com/", "gopher://example.com/", "javascript:1"]
)
async def test_non_http_schemes_are_refused(call, url):
    result = await call(web_fetch, {"url": url})
    assert result.is_error and "only http and https" in result.content


async def test_a_missing_url_argument_is_a_clear_error(call):
    result = await call(web_fetch, {})
    assert result.is_error and "'url'" in result.content


async def test_tls_certificates_are_still_verified_when_the_address_is_pinned(
    configure, call, tmp_path
):
    cert, key = _self_signed_localhost(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    tls = WebTestServer()
    standard_routes(tls)
    tls.socket = context.wrap_socket(tls.socket, server_side=True)
    thread = threading.Thread(target=tls.serve_forever, daemon=True)
    thread.start()
    try:
        configure(web_fetch_allow_hosts=(f"localhost:{tls.port}",), web_fetch_timeout=5.0)
        result = await call(web_fetch, {"url": f"https://localhost:{tls.port}/text"})
    finally:
        ThreadingHTTPServer.shutdown(tls)
        tls.server_close()
    assert result.is_error and "CERTIFICATE_VERIFY_FAILED" in result.content


def _self_signed_localhost(directory) -> tuple[str, str]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.now(UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=1))
        .not_valid_after(now + timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return str(cert_path), str(key_path)
