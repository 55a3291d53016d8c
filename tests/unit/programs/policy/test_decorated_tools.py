"""Resolution reads what @function declares: toolset, unsafe_in, defer, requires_env, expose."""

from __future__ import annotations

import pkgutil
import sys

from openprogram.programs import function
from openprogram.programs.policy import resolve_tools


def test_function_settings_drive_every_layer(monkeypatch):
    monkeypatch.delenv("OPENPROGRAM_TEST_KEY", raising=False)

    @function(toolset=["research"])
    def arxiv(query: str) -> str:
        """Search arXiv."""
        return query

    @function(unsafe_in=["plan"])
    def delete_file(path: str) -> str:
        """Delete a file."""
        return path

    @function(requires_env=["OPENPROGRAM_TEST_KEY"])
    def paid_search(query: str) -> str:
        """Search with a paid API."""
        return query

    @function(expose=False)
    def merge_sections(text: str) -> str:
        """Internal helper."""
        return text

    @function(defer=True)
    def rarely_used(x: int) -> int:
        """Rarely used."""
        return x

    assert resolve_tools(toolset="research").names == ["arxiv"]
    planning = resolve_tools(source="plan", only_available=True)
    assert planning.names == ["tool_search", "arxiv", "rarely_used"]
    summaries = {row.name: row.summary for row in planning.decisions}
    assert summaries["delete_file"] == "L3: unsafe_in plan"
    assert summaries["paid_search"] == "L4: requires_env OPENPROGRAM_TEST_KEY is not set"
    assert summaries["merge_sections"] == "L2: not exposed (expose=False)"
    assert summaries["rarely_used"] == "offered (deferred)"


def test_a_tool_built_without_global_registration_is_not_offered():
    @function(register_globally=False)
    def private(x: int) -> int:
        """Only for Python callers."""
        return x

    assert private._agent_tool.name == "private"
    assert "private" not in [row.name for row in resolve_tools().decisions]


def test_importing_the_runtime_imports_every_shipped_tool_module():
    import openprogram.programs.builtin as builtin

    modules = [m.name for m in pkgutil.iter_modules(builtin.__path__) if not m.name.startswith("_")]
    missing = [m for m in modules if f"{builtin.__name__}.{m}" not in sys.modules]
    assert missing == [], f"openprogram.programs.builtin does not import {missing}"
