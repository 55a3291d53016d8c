"""Resolution tests start from an empty registry holding only tool_search, as shipped."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from openprogram.agent.types import AgentTool, AgentToolResult
from openprogram.programs import registry
from openprogram.programs._availability import clear_availability_cache
from openprogram.programs.deferred import tool_search


class EchoTool(AgentTool):
    """A real AgentTool whose execute answers with its own name."""

    async def execute(self, call_id, args, cancel=None, on_update=None) -> AgentToolResult:
        return AgentToolResult(content=f"{self.name} ran")


AddTool = Callable[..., AgentTool]


@pytest.fixture(autouse=True)
def registry_with_tool_search(clean_registry):
    registry.reset_registry()
    registry.register(tool_search)
    clear_availability_cache()
    yield
    clear_availability_cache()


@pytest.fixture
def add_tool() -> AddTool:
    def add(name: str, description: str = "", **settings: Any) -> AgentTool:
        tool = EchoTool(name=name, description=description or f"The {name} tool.", **settings)
        return registry.register(tool)

    return add
