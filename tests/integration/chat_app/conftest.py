"""Chat fixtures: a fresh channel layer per test, session cookies, socket helpers, test tools."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest
from channels.layers import channel_layers
from channels.testing import WebsocketCommunicator
from django.test import Client

ORIGIN = "http://127.0.0.1:8000"


@pytest.fixture(autouse=True)
def fresh_channel_layer():
    # The in-memory layer is a process singleton; queues must not outlive a test's loop.
    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    """A real redis-server for the tests that need several processes' channel layer.

    Module-scoped, so it is gone before other modules count this process's children.
    """
    from tests.servers import redis_server

    with redis_server(tmp_path_factory.mktemp("redis"), db=2) as url:
        yield url


@pytest.fixture
def redis_channel_layer(settings, redis_url):
    """The Redis channel layer, as with several daphne processes (a fresh prefix per test)."""
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {
                "hosts": [{"address": redis_url, "socket_timeout": 15}],
                "prefix": f"test-{uuid.uuid4().hex[:8]}",
            },
        }
    }
    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


@pytest.fixture
async def no_leftover_turns():
    """Fail loudly if a test leaves a turn running; stop it so the next test starts clean."""
    from chat_app.turn_registry import turns_running

    yield
    leftovers = turns_running()
    for turn in leftovers:
        turn.request.cancel.set()
        if turn.task is not None:
            await asyncio.wait_for(asyncio.shield(turn.task), 10)
    assert not leftovers, "a turn was still running at the end of the test"


@pytest.fixture
def conversation(alice):
    """Alice's new conversation (a module may define its own)."""
    from chat_app.services import conversation_create

    return conversation_create(owner=alice)


@pytest.fixture
def asgi_application(transactional_db):
    """The real ASGI app; imported outside the event loop (start-up touches the database)."""
    from openprogram_site.asgi import application

    return application


def session_cookie(user) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


@pytest.fixture
def alice_cookie(alice) -> str:
    return session_cookie(alice)


@pytest.fixture
def bob_cookie(bob) -> str:
    return session_cookie(bob)


async def open_socket(
    conversation: Any, cookie: str | None, origin: str | None = ORIGIN
) -> tuple[WebsocketCommunicator, bool, Any]:
    """Open ``/ws/chat/<public id>/`` for a Conversation (or a public id given as is)."""
    from openprogram_site.asgi import application

    public_id = getattr(conversation, "public_id", conversation)

    headers = [(b"host", b"127.0.0.1:8000")]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    if cookie is not None:
        headers.append((b"cookie", f"sessionid={cookie}".encode()))
    communicator = WebsocketCommunicator(application, f"/ws/chat/{public_id}/", headers=headers)
    connected, code = await communicator.connect(timeout=30)
    return communicator, connected, code


async def close_code(communicator: WebsocketCommunicator, timeout: float = 30.0) -> int | None:
    """The code the server closed an accepted socket with (refusals accept, then close)."""
    output = await communicator.receive_output(timeout=timeout)
    assert output["type"] == "websocket.close", output
    return output.get("code")


async def receive_until(
    communicator: WebsocketCommunicator, predicate, timeout: float = 60.0
) -> list[dict[str, Any]]:
    """Frames up to and including the first one ``predicate`` accepts."""
    frames: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"no matching frame within {timeout}s; got {frames!r}")
        frame = await communicator.receive_json_from(timeout=remaining)
        frames.append(frame)
        if predicate(frame):
            return frames


def of_type(kind: str, **fields: Any):
    return lambda f: f.get("type") == kind and all(f.get(k) == v for k, v in fields.items())


@pytest.fixture
def chat_tools(clean_registry):
    """Deterministic tools for socket tests: an echo, one needing approval, a slow one, a question."""
    from openprogram import function
    from openprogram.agent.context import QuestionRequest, get_turn

    @function
    def echo_twice(text: str) -> str:
        """Repeat text twice.

        Args:
            text: what to repeat
        """
        return text * 2

    @function(requires_approval=True)
    def guarded(text: str) -> str:
        """Needs the user's approval before it runs.

        Args:
            text: what to return
        """
        return f"guarded ran with {text}"

    @function
    async def ticker(seconds: float, on_update, cancel) -> str:
        """Stream ticks until done or cancelled.

        Args:
            seconds: how long to run
        """
        deadline = time.monotonic() + seconds
        count = 0
        while time.monotonic() < deadline and not cancel.is_set():
            count += 1
            on_update(f"tick {count}\n")
            await asyncio.sleep(0.02)
        return f"ticked {count} times"

    @function
    async def pick_color(prompt: str) -> str:
        """Ask the user to pick a colour.

        Args:
            prompt: the question
        """
        answer = await get_turn().question_hook(
            QuestionRequest(call_id="question-color", question=prompt, choices=["red", "blue"])
        )
        return f"user picked {answer}"

    @function
    def broken(text: str) -> str:
        """Always fails.

        Args:
            text: ignored
        """
        raise RuntimeError(f"broken tool refused {text!r}")

    return {"echo_twice", "guarded", "ticker", "pick_color", "broken"}
