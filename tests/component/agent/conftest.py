"""Fixtures for real turns: the fake OpenAI server, an empty registry, a turn runner."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from openprogram.agent.events import Event, TurnFinished, TurnRequest
from openprogram.providers.retry import RetryPolicy
from tests.fakes.openai_server import FakeOpenAIServer

FAKE_MODEL = "openai/fake-model"
FAST_RETRY = RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.05)
# A cap, not a wait: the first turn of a process imports litellm (~5 s alone, far more
# on a loaded machine), and a turn that hangs still fails here.
TURN_TIMEOUT = 120.0


@pytest.fixture(scope="session")
def _fake_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def fake_openai(
    _fake_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> Iterator[FakeOpenAIServer]:
    """The running fake server, with an empty script, and every non-offline model pointed at it."""
    _fake_server.reset()
    monkeypatch.setenv("OPENPROGRAM_API_BASE", _fake_server.base_url)
    monkeypatch.setenv("OPENPROGRAM_API_KEY", "test")
    yield _fake_server


@pytest.fixture
def empty_registry(clean_registry: None) -> None:
    """Only the tools a test registers (tool_search joins when something is deferred)."""
    from openprogram.programs.registry import reset_registry

    reset_registry()


async def run_turn(request: TurnRequest, *, until: type[Event] = TurnFinished) -> list[Event]:
    """Drive one turn to its end and return every event it yielded."""
    from openprogram.agent.dispatcher import process_user_turn

    async def collect() -> list[Event]:
        events: list[Event] = []
        async for event in process_user_turn(request, retry=FAST_RETRY):
            events.append(event)
        return events

    return await asyncio.wait_for(collect(), TURN_TIMEOUT)


def of_type(events: list[Event], kind: type[Event]) -> list:
    return [event for event in events if isinstance(event, kind)]
