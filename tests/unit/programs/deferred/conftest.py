"""Layer-6 tests share the resolution tests' registry fixtures (tool_search registered)."""

from __future__ import annotations

from tests.unit.programs.policy.conftest import EchoTool, add_tool, registry_with_tool_search

__all__ = ["EchoTool", "add_tool", "registry_with_tool_search"]
