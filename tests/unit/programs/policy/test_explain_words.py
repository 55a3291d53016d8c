"""Words for people: every reason the walk writes reads as a sentence; the code stays beside."""

from __future__ import annotations

import pytest

from openprogram.programs.explain_words import plain_reason
from openprogram.programs.policy import apply_tool_policy, resolve_tools


@pytest.fixture
def four(add_tool):
    return [add_tool(name) for name in ("read", "write", "bash", "ask_user_question")]


def test_each_reason_of_a_real_resolution_has_words_of_its_own(four, add_tool):
    add_tool("hidden", expose=False)
    add_tool("deferred_one", defer=True)
    resolution = resolve_tools(
        profile=["read", "write", "bash", "ask_user_question"],
        deny=["write"],
        disabled={"bash": "eats disks"},
        attended=False,
    )
    words = {
        row.name: plain_reason(row.layer, row.reason)
        for row in resolution.decisions
        if not row.offered
    }
    assert words == {
        "hidden": "An internal helper: never offered to the model",
        "deferred_one": "Not in this profile",
        "write": "Switched off for this chat (web search switch or agent profile)",
        "bash": "Turned off for everyone by an admin: eats disks",
        "ask_user_question": "Held back: nobody is there to answer this turn",
        "tool_search": "Not needed: no offered tool loads on demand",
    }
    # No sentence here still starts with a layer code.
    assert not any(text.startswith("L") and text[1].isdigit() for text in words.values())


def test_a_disable_without_a_reason_keeps_the_plain_trace(four):
    resolution = resolve_tools(disabled={"bash": ""})
    assert resolution.decision("bash").reason == "globally disabled"
    assert plain_reason("L5", "globally disabled") == "Turned off for everyone by an admin"


def test_the_admins_reason_is_carried_by_apply_tool_policy_too(four):
    kept = apply_tool_policy(four, disabled={"bash": "broken"})
    assert [tool.name for tool in kept] == ["read", "write", "ask_user_question"]


@pytest.mark.parametrize(
    ("layer", "reason", "words"),
    [
        ("L2b", "not in profile 'research'", "Not in the profile “research”"),
        ("L2b", "toolset 'none' offers no tools", "Tools are switched off for this chat"),
        ("L3", "unsafe_in plan", "Not allowed in plan mode"),
        ("L3", "unsafe_in email", "Not allowed when the request comes from 'email'"),
        (
            "L4",
            "no web search backend: set SEARXNG_URL",
            "Can't run right now: no web search backend: set SEARXNG_URL",
        ),
        ("L5", "not in the allow list", "Not among the agent profile's allowed tools"),
        (None, "something new", "Something new"),
    ],
)
def test_named_and_unknown_reasons_still_read_as_sentences(layer, reason, words):
    assert plain_reason(layer, reason) == words
