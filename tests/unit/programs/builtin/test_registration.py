"""Every shipped tool registers at package import, in the toolsets the presets expect."""

from __future__ import annotations

import pytest

from openprogram.programs import get_agent_tool
from openprogram.programs.toolsets import expand_toolset

EXPECTED = {
    "read": ({"fs", "fs_read"}, set()),
    "glob": ({"fs", "fs_read"}, set()),
    "grep": ({"fs", "fs_read"}, set()),
    "list_dir": ({"fs", "fs_read"}, set()),
    "write": ({"fs"}, {"plan"}),
    "edit": ({"fs"}, {"plan"}),
    "bash": ({"runtime"}, {"plan"}),
    "web_fetch": ({"web"}, set()),
    "web_search": ({"web"}, set()),
    "ask_user_question": ({"interaction"}, set()),
    "todo_write": ({"interaction"}, set()),
    "todo_read": ({"interaction"}, set()),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_it_is_registered_with_its_toolsets_and_channel_blacklist(name):
    tool = get_agent_tool(name)
    assert tool is not None and tool.expose and tool.source == "builtin"
    toolsets, unsafe_in = EXPECTED[name]
    assert set(tool.toolsets) == toolsets
    assert set(tool.unsafe_in) == unsafe_in
    assert len(tool.description) > 120, "the docstring is the model's only guide"
    assert tool.parameters["type"] == "object"


def test_the_presets_resolve_to_the_shipped_tools():
    assert {"read", "glob", "grep", "list_dir"} <= set(expand_toolset("fs_read"))
    assert {"web_fetch", "web_search"} <= set(expand_toolset("web"))
    assert "bash" in expand_toolset("coding")
