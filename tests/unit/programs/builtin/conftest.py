"""Built-in tool tests run inside a turn whose workspace is a fresh temporary directory."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import openprogram.programs  # noqa: F401 - registers the shipped tools
from openprogram import config
from openprogram.agent.context import TurnContext, current_turn
from openprogram.agent.types import AgentToolResult

Call = Callable[..., Awaitable[AgentToolResult]]


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        config, "_config", config.Config(home=tmp_path / "home", results_dir=tmp_path / "results")
    )


@pytest.fixture
def configure(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """Change some framework settings for one test."""

    def change(**changes: Any) -> None:
        monkeypatch.setattr(config, "_config", dataclasses.replace(config.get_config(), **changes))

    return change


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    directory = tmp_path / "ws"
    directory.mkdir()
    return directory


@pytest.fixture
def turn(workspace: Path) -> Iterator[TurnContext]:
    context = TurnContext(user_id="alice", conversation_id="c1", workspace=workspace)
    token = current_turn.set(context)
    yield context
    current_turn.reset(token)


@pytest.fixture
def call() -> Call:
    """Run a shipped tool the way the agent loop does: through its AgentTool."""

    async def run(fn: Any, args: dict[str, Any] | str, **kwargs: Any) -> AgentToolResult:
        return await fn._agent_tool.execute("call-1", args, **kwargs)

    return run
