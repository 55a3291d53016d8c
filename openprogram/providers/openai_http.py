"""One OpenAI Chat Completions call sent and read by OpenProgram over aiohttp.

litellm's ``acompletion`` spent ~6 ms of CPU per call (request building, its logging
object, a cost calculation on the unread stream) and its reply came up through aiohttp,
httpx and the OpenAI SDK before our SSE parser saw it. Here the request is one JSON
POST on a pooled connection (one :class:`aiohttp.ClientSession` per event loop,
proxies from ``HTTP(S)_PROXY``/``NO_PROXY`` worked out once per URL, TLS verified
against ``SSL_CERT_FILE`` or certifi's bundle), and the body is read in whatever the socket delivered: one read
may hold many SSE events, and only ``data:`` payloads are JSON-decoded. No reader
task or queue: the caller's own task awaits the next read, so text that arrived
while it was busy comes out joined, and Stop fails the pending read and closes the
connection at once.

HTTP failures carry a :mod:`~openprogram.providers.retry` kind and the provider's
own message; a stream that breaks after it started raises
:class:`~openprogram.providers.openai_stream.StreamBroken`, as on litellm's path.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import os
import ssl
from collections.abc import AsyncIterator, Sequence
from typing import Any

import aiohttp
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

from openprogram.providers.openai_route import OpenAIRoute
from openprogram.providers.openai_stream import (
    ChunkAssembler,
    SSEEvents,
    StreamBroken,
    check_finish,
    read_events,
)
from openprogram.providers.retry import ProviderErrorKind, kind_for_status

__all__ = ["OpenAIHTTPError", "StreamStopped", "open_stream", "request_body", "stream_texts"]

_ERROR_BODY_LIMIT = 64 * 1024
_QUOTED_CHARS = 300


class OpenAIHTTPError(Exception):
    """A call the server refused or that never reached it, with its retry kind."""

    def __init__(
        self, kind: ProviderErrorKind, message: str, *, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.provider_error_kind: ProviderErrorKind = kind
        self.message = message
        self.retry_after = retry_after


class StreamStopped(Exception):
    """Set on the response's reader when the turn is stopped: the pending read ends."""


class _ReadTimeout(TimeoutError):
    """Nothing came for the whole read timeout."""


def request_body(
    route: OpenAIRoute, messages: list[dict[str, Any]], tools: Sequence[dict[str, Any]]
) -> bytes:
    """The JSON body litellm sends for the same call (its ``openai`` provider drops
    message fields that are None, e.g. the content of a tool-calls-only message)."""
    body: dict[str, Any] = {
        "model": route.model,
        "messages": [
            {key: value for key, value in message.items() if value is not None}
            for message in messages
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    text = json.dumps(body)
    if tools:
        # The same bytes as encoding ``body["tools"]`` with the rest, each tool's JSON
        # reused: the schemas are most of a request and the same in every turn.
        text = f'{text[:-1]}, "tools": [{", ".join(map(_tool_json, tools))}]}}'
    return text.encode()


_tools_json: dict[tuple[str, str, int], tuple[object, str]] = {}
_MAX_TOOLS_JSON = 4096
_FUNCTION_KEYS = frozenset({"name", "description", "parameters"})


def _tool_json(tool: dict[str, Any]) -> str:
    """``json.dumps(tool)`` for one ``tools=[...]`` entry, remembered per name, description
    and schema object. A schema is never changed in place (a tool whose schema changes is
    a new tool: MCP listings build new ones), and the entry keeps the schema object
    alive, so its id cannot be reused for another while remembered."""
    function = tool.get("function")
    if len(tool) != 2 or tool.get("type") != "function" or not isinstance(function, dict):
        return json.dumps(tool)
    if function.keys() != _FUNCTION_KEYS:
        return json.dumps(tool)
    name, description, schema = function["name"], function["description"], function["parameters"]
    if type(name) is not str or type(description) is not str:
        return json.dumps(tool)
    key = (name, description, id(schema))
    known = _tools_json.get(key)
    if known is not None and known[0] is schema:
        return known[1]
    text = json.dumps(tool)
    if len(_tools_json) >= _MAX_TOOLS_JSON:
        _tools_json.clear()
    _tools_json[key] = (schema, text)
    return text


# --- one pooled session per event loop ----------------------------------------------

_sessions: dict[asyncio.AbstractEventLoop, aiohttp.ClientSession] = {}


def _ssl_context() -> ssl.SSLContext:
    cafile = os.environ.get("SSL_CERT_FILE")
    if not cafile:
        import certifi

        cafile = certifi.where()
    return ssl.create_default_context(cafile=cafile)


_EXIT_CLOSE_SECONDS = 2.0
_closing: set[asyncio.Future[None]] = set()
"""Closes of dead loops' sessions under way (strong references until each is done)."""


def _close_dead(session: aiohttp.ClientSession) -> None:
    """Close a session whose loop is gone, from the running loop. aiohttp's ``close()``
    finds that loop closed and only marks the pool closed: nothing is awaited there."""
    closing = asyncio.ensure_future(session.close())
    _closing.add(closing)
    closing.add_done_callback(_closing.discard)


def _session() -> aiohttp.ClientSession:
    loop = asyncio.get_running_loop()
    session = _sessions.get(loop)
    if session is not None and not session.closed:
        return session
    for other in [other for other in _sessions if other.is_closed()]:
        stale = _sessions.pop(other, None)  # another thread's loop may sweep it first
        if stale is not None:
            _close_dead(stale)
    # trust_env stays off: it costs two worker-thread hops per request (a ~/.netrc read
    # and the proxy look-up), and a netrc entry for the model's host would clash with our
    # Authorization header. The proxy comes from :func:`_proxy_for` instead.
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(ssl=_ssl_context(), limit=0), auto_decompress=True
    )
    _sessions[loop] = session
    return session


@atexit.register
def _close_sessions() -> None:
    """At exit, close every pooled session on its own loop (so nothing warns): a closed
    loop's through a fresh one (aiohttp then only marks the pool closed), a stopped
    loop's on that loop, waiting at most :data:`_EXIT_CLOSE_SECONDS` (a TLS peer may not
    answer the close). A loop still running in another thread keeps its connections
    until the process ends; its session is detached so it does not warn."""
    for loop, session in list(_sessions.items()):
        if session.closed:
            continue
        if loop.is_closed():
            asyncio.run(session.close())
        elif not loop.is_running():
            with contextlib.suppress(TimeoutError):
                loop.run_until_complete(asyncio.wait_for(session.close(), _EXIT_CLOSE_SECONDS))
        else:
            session.detach()
    _sessions.clear()


_PROXY_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy")
_proxies: dict[tuple[str | None, ...], tuple[URL | None, aiohttp.BasicAuth | None]] = {}


def _proxy_for(url: str) -> tuple[URL | None, aiohttp.BasicAuth | None]:
    """The proxy ``HTTP(S)_PROXY``/``NO_PROXY`` give ``url`` (aiohttp's own rules, as with
    ``trust_env``), worked out once per URL and proxy environment."""
    key = (url, *(os.environ.get(name) for name in _PROXY_ENV))
    found = _proxies.get(key)
    if found is None:
        try:
            found = get_env_proxy_for_url(URL(url))
        except LookupError:
            found = (None, None)
        if len(_proxies) >= 256:
            _proxies.clear()
        _proxies[key] = found
    return found


# --- sending ------------------------------------------------------------------------


def _error_text(status: int, reason: str | None, raw: bytes) -> str:
    """The provider's own message: ``error.message`` of a JSON body, else the body."""
    text = raw.decode("utf-8", "replace").strip()
    try:
        payload = json.loads(text)
    except ValueError:
        payload = None
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict) and error.get("message"):
        message = str(error["message"])
        code = error.get("code")
        if code == "context_length_exceeded" and "context" not in message.lower():
            message = f"context length exceeded: {message}"
    elif isinstance(error, str) and error:
        message = error
    elif isinstance(payload, dict) and isinstance(payload.get("message"), str):
        message = payload["message"]
    else:
        message = text[:_QUOTED_CHARS] or (reason or "")
    return f"HTTP {status}: {message}"


def _retry_after(headers: Any) -> float | None:
    value = headers.get("Retry-After")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None  # an HTTP date: backoff decides


async def open_stream(route: OpenAIRoute, body: bytes, timeout: float) -> aiohttp.ClientResponse:
    """POST the call; the response once the server accepted it (status 200)."""
    limits = aiohttp.ClientTimeout(total=None, connect=timeout, sock_read=timeout)
    proxy, proxy_auth = _proxy_for(route.url)
    try:
        response = await _session().post(
            route.url,
            data=body,
            headers=route.headers,
            timeout=limits,
            proxy=proxy,
            proxy_auth=proxy_auth,
            # As the OpenAI SDK: a redirect is the server's answer, not a new request
            # carrying the key (and organisation headers) somewhere else.
            allow_redirects=False,
        )
    except TimeoutError as exc:
        raise OpenAIHTTPError(
            "provider_unavailable", f"no answer from {route.url} within {timeout:g} s"
        ) from exc
    except (aiohttp.ClientError, OSError) as exc:
        # aiohttp's messages name host and port, never the headers (the key).
        raise OpenAIHTTPError("provider_unavailable", f"{type(exc).__name__}: {exc}") from exc
    if response.status == 200:
        return response
    raw = b""
    try:
        while len(raw) < _ERROR_BODY_LIMIT:
            part = await response.content.read(_ERROR_BODY_LIMIT - len(raw))
            if not part:
                break
            raw += part
    except (aiohttp.ClientError, OSError, TimeoutError):
        pass  # the status alone still says what went wrong
    finally:
        response.close()
    message = _error_text(response.status, response.reason, raw)
    raise OpenAIHTTPError(
        kind_for_status(response.status), message, retry_after=_retry_after(response.headers)
    )


# --- reading --------------------------------------------------------------------------


class _Watchdog:
    """The read-inactivity timeout, checked once per ``timeout`` rather than re-armed on
    every read (aiohttp's ``sock_read`` moves a loop timer per network read, a good part
    of a streamed piece's cost): a stream fails after ``timeout`` to 2x ``timeout`` of
    silence. Silence is the server's while we wait for it (no bytes arrived while
    ``waiting``): a reader busy elsewhere, with the rest of the stream in the buffer,
    is not a stalled stream."""

    def __init__(self, response: aiohttp.ClientResponse, timeout: float) -> None:
        self.waiting = False
        self._seen = -1
        self._content = response.content
        self._timeout = timeout
        self._loop = asyncio.get_running_loop()
        self._handle = self._loop.call_later(timeout, self._check)
        connection = response.connection
        if connection is not None and connection.protocol is not None:
            connection.protocol.read_timeout = None  # the headers came; we watch the body

    def _check(self) -> None:
        arrived = self._content.total_bytes
        if arrived == self._seen and self.waiting:
            self._content.set_exception(_ReadTimeout(f"no data for {self._timeout:g} s"))
            return
        self._seen = arrived
        self._handle = self._loop.call_later(self._timeout, self._check)

    def stop(self) -> None:
        self._handle.cancel()


async def stream_texts(
    response: aiohttp.ClientResponse, assembler: ChunkAssembler, timeout: float
) -> AsyncIterator[str]:
    """The text of the stream, one item per network read (the text of every event that
    read brought, joined), feeding ``assembler``. Returns quietly when stopped
    (:class:`StreamStopped` set on the reader); releases or closes the connection."""
    content = response.content
    events = SSEEvents()
    watchdog = _Watchdog(response, timeout)
    finished = False
    try:
        while True:
            try:
                watchdog.waiting = True
                read = await content.readany()
                watchdog.waiting = False
            except StreamStopped:
                return
            except Exception as exc:
                # A connection dropped after the finish reason has lost nothing.
                if assembler.finish_reason is not None:
                    finished = True
                    return
                raise StreamBroken(f"{type(exc).__name__}: {exc}") from exc
            if not read:
                break
            text, broken, done = read_events(events, read, assembler)
            if text:
                yield text
            if broken is not None:
                raise broken
            check_finish(assembler)
            if done:
                finished = True
                return
        if assembler.finish_reason is None:
            raise StreamBroken("the stream ended before a finish reason was received")
        finished = True
    finally:
        watchdog.stop()
        if finished:
            response.release()  # back to the pool when the body was read to its end
        else:
            response.close()
