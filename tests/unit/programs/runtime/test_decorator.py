"""@function: settings, decoration-time errors, registration and the registry filters."""

from __future__ import annotations

import asyncio
import logging

import pytest

from openprogram import function
from openprogram.programs import registry
from openprogram.programs.decorator import (
    TOOL_SETTINGS,
    ToolDefinitionError,
    _build_and_register_tool,
    build_function_tool,
)
from openprogram.programs.execution import FunctionTool


def test_bare_decorator_registers_and_returns_the_plain_function():
    @function
    def shout(text: str) -> str:
        """Shout the text."""
        return text.upper()

    assert shout("hi") == "HI"
    tool = registry.get("shout")
    assert isinstance(tool, FunctionTool) and tool is shout._agent_tool
    assert tool.description == "Shout the text."
    assert (tool.source, tool.expose, tool.defer) == ("builtin", True, False)


async def test_decorator_with_overrides_sets_name_description_and_toolsets():
    @function(
        name="web_find", description="Find pages.", toolset=["research", "safe"], label="Find"
    )
    async def find(query: str) -> str:
        """Ignored docstring."""
        return query

    tool = registry.get("web_find")
    assert registry.get("find") is None
    assert (tool.name, tool.description, tool.label) == ("web_find", "Find pages.", "Find")
    assert tool.toolsets == ("research", "safe")
    assert tool.to_wire()["function"]["name"] == "web_find"
    assert (await tool.execute("c1", {"query": "q"})).content == "q"


def test_every_spec_setting_is_accepted_and_lands_on_the_tool():
    def gate() -> bool:
        return True

    @function(
        name="everything",
        description="All knobs.",
        parameters={"type": "object", "properties": {"x": {"type": "integer"}}},
        label="Everything",
        max_result_chars=1234,
        persist_full=False,
        head_ratio=0.25,
        stream_capacity_chars=99,
        timeout=3,
        timeout_min=1,
        timeout_max=10,
        cache=True,
        cache_ttl=5,
        check_fn=gate,
        requires_env="HOME",
        can_use=gate,
        requires_approval=True,
        expose=False,
        toolset="research",
        unsafe_in=["telegram"],
        available_if=gate,
        defer=True,
        register_globally=True,
        source="plugin",
        package="acme",
        override=False,
    )
    def all_knobs(x: int, timeout: float = 2) -> int:
        return x

    tool = all_knobs._agent_tool
    assert registry.get("everything") is tool
    assert tool.parameters == {"type": "object", "properties": {"x": {"type": "integer"}}}
    assert (tool.max_result_chars, tool.persist_full, tool.head_ratio) == (1234, False, 0.25)
    assert (tool.stream_capacity_chars, tool.timeout, tool.timeout_min, tool.timeout_max) == (
        99,
        3,
        1,
        10,
    )
    assert (tool.cache, tool.cache_ttl, tool.check_fn, tool.can_use) == (True, 5, gate, gate)
    assert tool.requires_env == ("HOME",) and tool.requires_approval is True
    assert (tool.expose, tool.toolsets, tool.unsafe_in) == (False, ("research",), {"telegram"})
    assert (tool.defer, tool.source, tool.package) == (True, "plugin", "acme")


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"colour": "red"}, r"tool 'tool': unknown setting\(s\) 'colour'"),
        ({"head_ratio": 1.0}, r"tool 'tool': head_ratio=1.0 must be strictly between 0 and 1"),
        ({"head_ratio": 0}, r"head_ratio=0 must be strictly between"),
        ({"timeout_min": 10, "timeout_max": 1}, r"timeout_min=10 is greater than timeout_max=1"),
        ({"max_result_chars": -5}, r"max_result_chars=-5 must be a positive integer"),
        ({"stream_capacity_chars": 0}, r"stream_capacity_chars=0 must be a positive integer"),
        ({"timeout": -1}, r"timeout=-1 must be a positive number of seconds"),
        ({"cache_ttl": float("nan")}, r"cache_ttl=nan must be a positive"),
        ({"name": "has space"}, r"name='has space' must be 1-64 letters"),
        ({"source": "cloud"}, r"source='cloud' must be one of"),
        ({"check_fn": 3}, r"check_fn=3 must be callable"),
        ({"requires_approval": "yes"}, r"requires_approval='yes' must be a bool or a callable"),
    ],
)
def test_bad_settings_fail_at_decoration_naming_tool_and_option(settings, message):
    with pytest.raises(ToolDefinitionError, match=message):

        @function(**settings)
        def tool(x: int) -> int:
            """Tool."""
            return x

    assert registry.get(settings.get("name", "tool")) is None


def test_a_tool_needs_a_description():
    with pytest.raises(ToolDefinitionError, match="tool 'silent': no description"):

        @function
        def silent() -> None:
            pass


def test_kwargs_without_an_explicit_schema_is_refused():
    with pytest.raises(ToolDefinitionError, match=r"\*\*kwargs function needs an explicit"):

        @function
        def anything(**kwargs) -> None:
            """Anything."""


async def test_timeout_bounds_without_a_timeout_parameter_only_clamp_the_static_budget():
    async def sleepy() -> str:
        """Sleep."""
        await asyncio.sleep(3600)
        return "never"

    tool = build_function_tool(sleepy, timeout=30, timeout_max=0.05)
    assert "timeout" not in tool.parameters["properties"]
    result = await tool.execute("c1", {})
    assert result.is_error and "timed out after 0.05 s" in result.content


def test_a_duplicate_name_is_refused_unless_override():
    @function(name="dup")
    def first() -> str:
        """First."""
        return "1"

    with pytest.raises(ToolDefinitionError, match="'dup' is already registered"):

        @function(name="dup")
        def second() -> str:
            """Second."""
            return "2"

    assert registry.get("dup") is first._agent_tool

    @function(name="dup", override=True)
    def third() -> str:
        """Third."""
        return "3"

    assert registry.get("dup") is third._agent_tool


def test_available_if_false_skips_registration_but_returns_the_function(caplog):
    with caplog.at_level(logging.INFO):

        @function(available_if=lambda: False)
        def gated() -> str:
            """Gated."""
            return "still callable"

    assert registry.get("gated") is None
    assert not hasattr(gated, "_agent_tool")
    assert gated() == "still callable"
    assert "'gated' not registered: available_if is false" in caplog.text


def test_available_if_raising_skips_registration_and_logs_why(caplog):
    def broken() -> bool:
        raise ImportError("optional dependency missing")

    with caplog.at_level(logging.WARNING):

        @function(available_if=broken)
        def gated_hard() -> str:
            """Gated."""
            return "x"

    assert registry.get("gated_hard") is None
    assert "available_if raised" in caplog.text
    assert "optional dependency missing" in caplog.text


def test_register_globally_false_builds_the_tool_without_registering_it():
    @function(register_globally=False)
    def private() -> str:
        """Private."""
        return "p"

    assert isinstance(private._agent_tool, FunctionTool)
    assert registry.get("private") is None


def test_build_and_register_handles_bound_methods():
    class Agentish:
        def research(self, topic: str) -> str:
            """Research a topic."""
            return topic

    tool = _build_and_register_tool(Agentish().research, toolset="research")
    assert registry.get("research") is tool
    assert list(tool.parameters["properties"]) == ["topic"]
    assert _build_and_register_tool(Agentish().research, available_if=False, name="r2") is None
    assert registry.get("r2") is None


def test_settings_table_matches_the_spec():
    spec_table = {
        "name", "description", "parameters", "label", "max_result_chars", "persist_full",
        "head_ratio", "stream_capacity_chars", "timeout", "timeout_min", "timeout_max",
        "cache", "cache_ttl", "check_fn", "requires_env", "can_use", "requires_approval",
        "expose", "toolset", "unsafe_in", "available_if", "defer", "register_globally",
    }  # fmt: skip
    assert spec_table | {"source", "package", "override"} == TOOL_SETTINGS


def _register_fixture_tools() -> None:
    @function(toolset="research")
    def web_search(q: str) -> str:
        """Search."""
        return q

    @function(toolset=["research", "safe"], unsafe_in="telegram")
    def read_page(url: str) -> str:
        """Read."""
        return url

    @function(expose=False)
    def _merge_notes() -> str:
        """Internal helper."""
        return ""

    @function(source="plugin")
    def plugin_echo(text: str) -> str:
        """Echo."""
        return text


def test_registry_filter_by_toolset():
    _register_fixture_tools()
    assert [t.name for t in registry.filter_for(toolset="research")] == ["web_search", "read_page"]
    assert [t.name for t in registry.filter_for(toolset="safe")] == ["read_page"]


def test_registry_filter_by_source_channel_hides_unsafe_tools():
    _register_fixture_tools()
    on_telegram = {t.name for t in registry.filter_for(source="telegram")}
    assert "read_page" not in on_telegram and "web_search" in on_telegram
    assert "read_page" in {t.name for t in registry.filter_for(source="web")}


def test_registry_filter_by_names_and_exposure():
    _register_fixture_tools()
    assert [t.name for t in registry.filter_for(names=["plugin_echo", "nope"])] == ["plugin_echo"]
    assert "_merge_notes" not in {t.name for t in registry.filter_for()}
    assert "_merge_notes" in {t.name for t in registry.filter_for(exposed_only=False)}
    assert registry.get("plugin_echo").source == "plugin"


def test_an_unbound_method_is_refused_because_self_would_reach_the_schema():
    with pytest.raises(ToolDefinitionError, match="tool 'method': 'self' would be sent"):

        class Holder:
            @function
            def method(self, x: int) -> int:
                """Method."""
                return x


def test_a_generator_is_refused_in_favour_of_on_update():
    with pytest.raises(ToolDefinitionError, match="tool 'lines': a generator cannot be a tool"):

        @function
        def lines():
            """Yield lines."""
            yield "a"


def test_a_non_bool_expose_means_exposed_with_the_value_kept_as_in_method_options(clean_registry):
    @function(expose="io")
    def shared_io(text: str) -> str:
        """Pass text through."""
        return text

    tool = shared_io._agent_tool
    assert (tool.expose, tool.expose_hint) == (True, "io")


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("max_result_chars", "big", "max_result_chars='big' must be a positive integer"),
        ("timeout", -1, "timeout=-1 must be a positive number of seconds"),
        ("requires_approval", "yes", "requires_approval='yes' must be a bool or a callable"),
        ("cache", "on", "cache='on' must be True or False"),
    ],
)
def test_a_plugin_tool_with_a_wrong_option_is_refused_at_registration(
    clean_registry, option, value, message
):
    from openprogram.agent.types import AgentTool
    from openprogram.programs import registry

    tool = AgentTool(name="plugin_tool", description="A plugin's own tool.")
    setattr(tool, option, value)
    with pytest.raises(registry.InvalidToolOption, match=f"tool 'plugin_tool': {message}"):
        registry.register(tool)
    assert registry.get("plugin_tool") is None
