"""A turn whose run history cannot be written still ends on every tab (none hangs)."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from chat_app.models import Run
from chat_app.services import conversation_create
from tests.integration.chat_app.conftest import of_type, open_socket, receive_until

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("asgi_application", "no_leftover_turns"),
]


async def test_alices_tab_is_told_the_turn_failed_when_its_history_is_gone(
    alice, alice_cookie, chat_tools
):
    conversation = await database_sync_to_async(conversation_create)(owner=alice)
    socket, _, _ = await open_socket(conversation, alice_cookie)
    await socket.send_json_to({"type": "user_message", "text": "/ticker seconds=30"})
    started = (await receive_until(socket, of_type("tool_update")))[-1]

    # The run's row disappears mid-turn: every later history write fails.
    await Run.objects.filter(pk=started["run_id"]).adelete()
    frames = await receive_until(socket, of_type("assistant_message"))

    ending = [f for f in frames if f["type"] in ("error", "turn_finished", "assistant_message")]
    assert [f["type"] for f in ending] == ["error", "turn_finished", "assistant_message"]
    assert ending[0]["message"].startswith("run history could not be written")
    assert ending[1]["stop_reason"] == "error"
    assert ending[2]["status"] == "error"
    seqs = [f["seq"] for f in frames]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)

    await socket.send_json_to({"type": "user_message", "text": "/echo_twice text=hi"})
    again = (await receive_until(socket, of_type("assistant_message")))[-1]
    assert again["status"] == "completed"
    await socket.disconnect()
