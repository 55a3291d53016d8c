"""Agent methods become tools only when asked: the spec's Agent method invariants."""

from __future__ import annotations

import logging

import pytest

from openprogram import Agent
from openprogram.agentic_programming import current_call_tree
from openprogram.programs import registry
from openprogram.programs.decorator import ToolDefinitionError

pytestmark = pytest.mark.usefixtures("clean_registry")


def test_it_registers_a_method_only_with_explicit_tool_true():
    class Greeter(Agent):
        method_options = {"greet_ar1": {"tool": True}}

        def greet_ar1(self, who: str) -> str:
            """Greet someone."""
            return f"hi {who}"

        def helper_ar1(self) -> str:
            """Not a tool: no option."""
            return "x"

    agent = Greeter()
    tool = registry.get("greet_ar1")
    assert tool is not None and tool.source == "agent"
    assert registry.get("helper_ar1") is None
    assert agent.greet_ar1._agent_tool is tool
    assert not hasattr(agent.helper_ar1, "_agent_tool")


def test_it_registers_a_method_with_as_tool_true():
    class Greeter(Agent):
        method_options = {"greet_ar2": {"as_tool": True}}

        def greet_ar2(self, who: str) -> str:
            """Greet someone."""
            return who

    Greeter()
    assert registry.get("greet_ar2") is not None


def test_it_does_not_register_methods_when_only_other_options_are_set():
    class Quiet(Agent):
        method_options = {"quiet_ar3": {"toolset": ["research"], "timeout": 5}}

        def quiet_ar3(self) -> str:
            """Configured but not a tool."""
            return "q"

    agent = Quiet()
    assert registry.get("quiet_ar3") is None
    assert agent.method_tools == {}


def test_tool_false_skips_the_shared_registry():
    class Skipped(Agent):
        method_options = {"skip_ar4": {"tool": False, "description": "never a tool"}}

        def skip_ar4(self) -> str:
            """Skip me."""
            return "s"

    agent = Skipped()
    assert registry.get("skip_ar4") is None
    assert agent.skip_ar4() == "s"


def test_register_globally_false_skips_the_registry_but_attaches_agent_tool():
    class Local(Agent):
        method_options = {"local_ar5": {"tool": True, "register_globally": False}}

        def local_ar5(self, n: int) -> int:
            """Double a number."""
            return n * 2

    agent = Local()
    assert registry.get("local_ar5") is None
    tool = agent.local_ar5._agent_tool
    assert tool.name == "local_ar5"
    assert tool.parameters["properties"]["n"]["type"] == "integer"


async def test_a_register_globally_false_tool_still_runs_the_bound_method():
    class Counter(Agent):
        method_options = {"bump_ar6": {"tool": True, "register_globally": False}}

        def __init__(self) -> None:
            super().__init__()
            self.count = 10

        def bump_ar6(self, by: int) -> int:
            """Add to the counter."""
            self.count += by
            return self.count

    agent = Counter()
    result = await agent.bump_ar6._agent_tool.execute("c1", {"by": 5})
    assert (result.content, result.is_error, agent.count) == ("15", False, 15)


def test_available_if_false_skips_registration_but_keeps_scope_handling():
    class Gated(Agent):
        method_options = {"gated_ar7": {"tool": True, "available_if": lambda: False}}

        def gated_ar7(self, x: str) -> list[dict]:
            """Gated."""
            return current_call_tree().to_list()

    agent = Gated()
    assert registry.get("gated_ar7") is None
    assert not hasattr(agent.gated_ar7, "_agent_tool")
    nodes = agent.gated_ar7("v")
    assert [(n["method"], n["inputs"], n["status"]) for n in nodes] == [
        ("Gated.gated_ar7", {"x": "v"}, "running")
    ]


def test_the_schema_comes_from_signature_and_docstring_without_self():
    class Documented(Agent):
        method_options = {"lookup_ar8": {"tool": True, "toolset": ["research"]}}

        def lookup_ar8(self, query: str, limit: int = 3) -> str:
            """Look something up.

            Args:
                query: What to look for.
                limit: How many answers.
            """
            return query

    Documented()
    tool = registry.get("lookup_ar8")
    assert tool.description == "Look something up."
    assert set(tool.parameters["properties"]) == {"query", "limit"}
    assert tool.parameters["required"] == ["query"]
    assert tool.parameters["properties"]["query"]["description"] == "What to look for."
    assert "lookup_ar8" in registry.toolset_members("research")


def test_a_non_bool_expose_exposes_the_tool_and_is_kept_as_metadata():
    class Io(Agent):
        method_options = {"io_ar9": {"tool": True, "expose": "io"}}

        def io_ar9(self) -> str:
            """Io."""
            return ""

    Io()
    tool = registry.get("io_ar9")
    assert tool.expose is True and tool.expose_hint == "io"


def test_expose_false_registers_a_hidden_tool():
    class Hidden(Agent):
        method_options = {"hidden_ar10": {"tool": True, "expose": False}}

        def hidden_ar10(self) -> str:
            """Hidden."""
            return ""

    Hidden()
    assert registry.get("hidden_ar10").expose is False
    assert "hidden_ar10" not in [t.name for t in registry.filter_for()]


def test_a_second_instance_of_the_same_class_takes_over_the_tool_name(caplog):
    class Twin(Agent):
        method_options = {"twin_ar11": {"tool": True}}

        def __init__(self, label: str) -> None:
            super().__init__()
            self.label = label

        def twin_ar11(self) -> str:
            """Who am I."""
            return self.label

    first = Twin("first")
    with caplog.at_level(logging.WARNING):
        second = Twin("second")
    assert registry.get("twin_ar11") is second.twin_ar11._agent_tool
    assert first.twin_ar11._agent_tool is not second.twin_ar11._agent_tool
    assert "takes over the tool 'twin_ar11'" in caplog.text
    assert first.twin_ar11() == "first"


def test_another_holder_of_the_tool_name_makes_construction_fail():
    class One(Agent):
        method_options = {"clash_ar12": {"tool": True}}

        def clash_ar12(self) -> str:
            """One."""
            return "1"

    class Other(Agent):
        method_options = {"clash_ar12": {"tool": True}}

        def clash_ar12(self) -> str:
            """Other."""
            return "2"

    One()
    with pytest.raises(ToolDefinitionError, match="clash_ar12"):
        Other()


def test_tools_are_built_even_when_a_subclass_init_skips_super():
    class Forgetful(Agent):
        method_options = {"forget_ar13": {"tool": True}}

        def __init__(self) -> None:
            self.ready = True

        def forget_ar13(self) -> str:
            """Still a tool."""
            return "ok"

    Forgetful()
    assert registry.get("forget_ar13") is not None


def test_a_subclass_inherits_its_parent_method_options():
    class Base(Agent):
        method_options = {"inherit_ar14": {"tool": True}}

        def inherit_ar14(self) -> str:
            """Inherited."""
            return type(self).__name__

    class Child(Base):
        pass

    child = Child()
    assert registry.get("inherit_ar14") is child.inherit_ar14._agent_tool
    assert child.inherit_ar14() == "Child"


def test_methods_from_a_plain_mixin_get_scopes_and_can_be_tools():
    class Formatting:
        def shout_ar15(self, text: str) -> str:
            """Shout."""
            return current_call_tree().nodes()[0].method + ":" + text.upper()

    class Loud(Formatting, Agent):
        method_options = {"shout_ar15": {"tool": True}}

    agent = Loud()
    assert agent.shout_ar15("hi") == "Formatting.shout_ar15:HI"
    assert registry.get("shout_ar15") is agent.shout_ar15._agent_tool
    assert Formatting().shout_ar15 is not None  # the mixin itself is left untouched
    assert not hasattr(vars(Formatting)["shout_ar15"], "_openprogram_scoped")
