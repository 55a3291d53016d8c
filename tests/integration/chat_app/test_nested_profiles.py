"""A nested ``arun(toolset=<profile>)`` inside a real chat turn sees the owner's stored profiles.

The turn goes through the real ASGI app and socket: tools_app reads alice's stored
profiles, the turn carries them, and the Agent tool's nested run names one. Bob's
profiles never reach alice's turn, and a nested run never gets a tool the outer turn
was not offered.
"""

from __future__ import annotations

import pytest

from chat_app.services import conversation_create
from tests.integration.chat_app.conftest import of_type, open_socket, receive_until
from tools_app.services import profile_create

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("asgi_application", "no_leftover_turns"),
]


@pytest.fixture
def nested_tools(clean_registry):
    from openprogram import Agent, function

    @function
    def shout_np(word: str) -> str:
        """Shout a word back.

        Args:
            word: the word
        """
        return f"{word.upper()}!"

    class Nester(Agent):
        method_options = {"nest_np": {"tool": True}}

        async def nest_np(self, word: str, toolset: str) -> str:
            """Ask the model to shout a word, with only the named tool profile.

            Args:
                word: the word to shout
                toolset: the user's tool profile for the nested run
            """
            return await self.arun(f'/shout_np {{"word": "{word}"}}', toolset=toolset)

    return Nester()


async def _turn(alice_cookie, conversation, text: str) -> list[dict]:
    socket, connected, _ = await open_socket(conversation, alice_cookie)
    assert connected
    await socket.send_json_to({"type": "user_message", "text": text, "model": "offline"})
    frames = await receive_until(socket, of_type("assistant_message"), timeout=30)
    await socket.disconnect()
    return frames


def _finished(frames: list[dict], name: str) -> list[dict]:
    return [f for f in frames if f["type"] == "tool_finished" and f.get("name") == name]


def _conversation(alice, bob, *, outer_tools: list[str]):
    profile_create(owner=alice, name="quiet", tools=["shout_np"])
    profile_create(owner=bob, name="bobs", tools=["shout_np"])
    profile_create(owner=alice, name="outer", tools=outer_tools)
    return conversation_create(owner=alice, profile="outer")


@pytest.mark.parametrize(
    ("toolset", "outer_tools", "shout_runs"),
    [
        # alice's own stored profile, and the outer turn offered shout_np: it runs.
        ("quiet", ["nest_np", "shout_np"], True),
        # Her profile names shout_np, but the outer turn did not offer it: nothing more.
        ("quiet", ["nest_np"], False),
        # Bob's profile name means nothing in alice's turn.
        ("bobs", ["nest_np", "shout_np"], False),
    ],
)
async def test_a_nested_run_gets_the_named_stored_profile_within_the_outer_turn(
    nested_tools, alice, bob, alice_cookie, toolset, outer_tools, shout_runs
):
    from channels.db import database_sync_to_async

    conversation = await database_sync_to_async(_conversation)(alice, bob, outer_tools=outer_tools)

    frames = await _turn(
        alice_cookie, conversation, f'/nest_np {{"word": "otters", "toolset": "{toolset}"}}'
    )

    (outer,) = _finished(frames, "nest_np")
    shouts = [f for f in _finished(frames, "shout_np") if not f.get("is_error")]
    if shout_runs:
        assert [f.get("parent_call_id") for f in shouts] == [outer["call_id"]]
        assert not outer.get("is_error")
    else:
        assert shouts == []
    assert frames[-1]["status"] == "completed"
