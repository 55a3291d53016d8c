"""method_options are checked when the class is defined, naming what is wrong."""

from __future__ import annotations

import pytest

from openprogram import Agent
from openprogram.agentic_programming import METHOD_OPTION_KEYS
from openprogram.agentic_programming.agent_method import parse_method_options
from openprogram.programs.decorator import TOOL_SETTINGS, ToolDefinitionError


def test_method_options_accept_every_function_setting_but_source():
    assert (TOOL_SETTINGS - {"source"}) <= METHOD_OPTION_KEYS
    assert {"tool", "as_tool", "register_globally"} <= METHOD_OPTION_KEYS
    assert "source" not in METHOD_OPTION_KEYS


def test_it_rejects_an_unknown_option_naming_class_method_and_option():
    with pytest.raises(ToolDefinitionError, match=r"Bad\.method_options\['run'\].*'tiemout'"):

        class Bad(Agent):
            method_options = {"run": {"tool": True, "tiemout": 3}}

            def run(self) -> str:
                """Run."""
                return ""


def test_it_rejects_options_for_a_method_that_does_not_exist():
    with pytest.raises(ToolDefinitionError, match=r"'reserch'.*not an ordinary method"):

        class Typo(Agent):
            method_options = {"reserch": {"tool": True}}

            def research(self) -> str:
                """Research."""
                return ""


def test_it_rejects_a_non_bool_tool_flag():
    with pytest.raises(ToolDefinitionError, match=r"tool='yes' must be True or False"):
        parse_method_options("A", "m", {"tool": "yes"})


def test_it_rejects_tool_and_as_tool_that_disagree():
    with pytest.raises(ToolDefinitionError, match="disagree"):
        parse_method_options("A", "m", {"tool": True, "as_tool": False})


def test_it_rejects_options_that_are_not_a_dict():
    with pytest.raises(ToolDefinitionError, match=r"must be a dict of options, got list"):
        parse_method_options("A", "m", ["tool"])


def test_parsed_options_keep_settings_and_drop_the_registration_flags():
    options = parse_method_options("A", "m", {"as_tool": True, "timeout": 4, "expose": "io"})
    assert options.wants_tool is True
    assert options.settings == {"timeout": 4, "expose": True}
    assert options.expose_hint == "io"


@pytest.mark.usefixtures("clean_registry")
def test_a_bad_setting_value_fails_at_construction_naming_the_tool():
    class Slow(Agent):
        method_options = {"slow_am1": {"tool": True, "timeout_min": 9, "timeout_max": 1}}

        def slow_am1(self, timeout: float = 2) -> str:
            """Slow."""
            return ""

    with pytest.raises(ToolDefinitionError, match=r"slow_am1.*timeout_min"):
        Slow()
