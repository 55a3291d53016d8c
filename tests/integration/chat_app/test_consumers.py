"""The conversation socket against the real ASGI application (auth, origin check, router)."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer

from chat_app import relay as relay_module
from chat_app.consumers import CLOSE_NOT_FOUND, CLOSE_UNAUTHENTICATED
from chat_app.models import Run, RunEvent, ToolCallRecord
from chat_app.turns import active_turn, control_group
from core.socket_frames import CLOSE_TOO_LARGE
from openprogram.providers.offline import CHUNK_CHARS
from openprogram_site.origins import CLOSE_FOREIGN_ORIGIN
from tests.integration.chat_app.conftest import close_code, of_type, open_socket, receive_until

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("asgi_application", "no_leftover_turns"),
]


async def _run_record(run_id: int) -> Run:
    return await database_sync_to_async(Run.objects.get)(pk=run_id)


async def _finish(socket) -> list[dict]:
    return await receive_until(socket, of_type("assistant_message"))


async def test_anonymous_socket_is_closed_with_4401(conversation):
    socket, connected, _ = await open_socket(conversation, cookie=None)
    assert connected, "refusals are accepted first so the browser can see the code"
    assert await close_code(socket) == CLOSE_UNAUTHENTICATED


async def test_handshake_from_a_foreign_origin_is_closed_with_4403(conversation, alice_cookie):
    for origin in ("http://evil.example", "http://127.0.0.1:9999", None):
        socket, _, _ = await open_socket(conversation, alice_cookie, origin=origin)
        assert await close_code(socket) == CLOSE_FOREIGN_ORIGIN, origin


async def test_bob_cannot_join_alices_conversation(conversation, bob_cookie):
    socket, _, _ = await open_socket(conversation, bob_cookie)
    assert await close_code(socket) == CLOSE_NOT_FOUND


async def test_an_unknown_conversation_is_not_found(alice_cookie, alice):
    socket, _, _ = await open_socket(uuid.uuid4(), alice_cookie)
    assert await close_code(socket) == CLOSE_NOT_FOUND


async def test_text_streams_in_before_the_turn_finishes(conversation, alice_cookie, chat_tools):
    socket, connected, _ = await open_socket(conversation, alice_cookie)
    assert connected
    await socket.send_json_to({"type": "user_message", "text": "hello there", "model": "offline"})
    frames = await _finish(socket)
    kinds = [f["type"] for f in frames]
    assert kinds[0] == "user_message"
    assert kinds[1] == "tools_resolved"
    assert "text_delta" in kinds
    assert (
        kinds.index("text_delta") < kinds.index("turn_finished") < kinds.index("assistant_message")
    )
    seqs = [f["seq"] for f in frames]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    streamed = "".join(f["text"] for f in frames if f["type"] == "text_delta")
    assert "echo_twice" in streamed
    final = frames[-1]
    assert final["status"] == "completed" and final["text"] == streamed
    assert "<p>" in final["html"]
    await socket.disconnect()


async def test_tool_call_started_comes_before_tool_finished(conversation, alice_cookie, chat_tools):
    socket, _, _ = await open_socket(conversation, alice_cookie)
    await socket.send_json_to({"type": "user_message", "text": "/echo_twice text=ab"})
    frames = await _finish(socket)
    kinds = [f["type"] for f in frames]
    assert kinds.index("tool_call_started") < kinds.index("tool_finished")
    finished = next(f for f in frames if f["type"] == "tool_finished")
    assert finished["preview"] == "abab" and not finished["is_error"]
    record = await database_sync_to_async(ToolCallRecord.objects.get)(call_id=finished["call_id"])
    assert (record.name, record.arguments, record.status) == ("echo_twice", {"text": "ab"}, "done")
    await socket.disconnect()


async def test_an_approved_call_runs(conversation, alice_cookie, chat_tools):
    socket, _, _ = await open_socket(conversation, alice_cookie)
    await socket.send_json_to({"type": "user_message", "text": "/guarded text=yes"})
    asked = (await receive_until(socket, of_type("approval_requested")))[-1]
    assert asked["name"] == "guarded" and asked["arguments"] == {"text": "yes"}
    await socket.send_json_to({"type": "approve", "call_id": asked["call_id"]})
    frames = await _finish(socket)
    resolved = next(f for f in frames if f["type"] == "approval_resolved")
    assert resolved["approved"] is True
    finished = next(f for f in frames if f["type"] == "tool_finished")
    assert finished["preview"] == "guarded ran with yes"
    await socket.disconnect()


async def test_a_denied_call_does_not_run_and_keeps_the_reason(
    conversation, alice_cookie, chat_tools
):
    socket, _, _ = await open_socket(conversation, alice_cookie)
    await socket.send_json_to({"type": "user_message", "text": "/guarded text=no"})
    asked = (await receive_until(socket, of_type("approval_requested")))[-1]
    await socket.send_json_to({"type": "deny", "call_id": asked["call_id"], "reason": "not today"})
    frames = await _finish(socket)
    resolved = next(f for f in frames if f["type"] == "approval_resolved")
    assert (resolved["approved"], resolved["reason"]) == (False, "not today")
    finished = next(f for f in frames if f["type"] == "tool_finished")
    assert finished["is_error"] and "guarded ran" not in finished["preview"]
    record = await database_sync_to_async(ToolCallRecord.objects.get)(call_id=asked["call_id"])
    assert record.status == "denied"
    await socket.disconnect()


async def test_an_unanswered_approval_times_out_as_denied(
    conversation, alice_cookie, chat_tools, settings
):
    settings.APPROVAL_TIMEOUT_SECONDS = 1
    socket, _, _ = await open_socket(conversation, alice_cookie)
    await socket.send_json_to({"type": "user_message", "text": "/guarded text=late"})
    frames = await _finish(socket)
    resolved = next(f for f in frames if f["type"] == "approval_resolved")
    assert resolved["approved"] is False and "within 1 s" in resolved["reason"]
    await socket.disconnect()


async def test_an_unattended_turn_denies_without_waiting(conversation, alice_cookie, chat_tools):
    socket, _, _ = await open_socket(conversation, alice_cookie)
    await socket.send_json_to(
        {"type": "user_message", "text": "/guarded text=x", "attended": False}
    )
    frames = await _finish(socket)
    resolved = next(f for f in frames if f["type"] == "approval_resolved")
    assert resolved["approved"] is False and "nobody is attending" in resolved["reason"]
    await socket.disconnect()


async def test_an_approval_is_bound_to_the_conversation_owner(
    conversation, alice_cookie, chat_tools, bob
):
    socket, _, _ = await open_socket(conversation, alice_cookie)
    await socket.send_json_to({"type": "user_message", "text": "/guarded text=mine"})
    asked = (await receive_until(socket, of_type("approval_requested")))[-1]
    # A control message claiming to come from bob reaches the turn's group, and is ignored.
    await get_channel_layer().group_send(
        control_group(conversation.pk),
        {
            "type": "turn.control",
            "action": "approve",
            "user_id": bob.pk,
            "call_id": asked["call_id"],
        },
    )
    await socket.send_json_to(
        {"type": "deny", "call_id": asked["call_id"], "reason": "alice says no"}
    )
    frames = await _finish(socket)
    resolved = next(f for f in frames if f["type"] == "approval_resolved")
    assert (resolved["approved"], resolved["reason"]) == (False, "alice says no")
    await socket.disconnect()


async def test_ask_user_question_gets_the_answer_back(conversation, alice_cookie, chat_tools):
    socket, _, _ = await open_socket(conversation, alice_cookie)
    await socket.send_json_to({"type": "user_message", "text": "/pick_color prompt=Which?"})
    asked = (await receive_until(socket, of_type("question_asked")))[-1]
    assert (asked["question"], asked["choices"]) == ("Which?", ["red", "blue"])
    await socket.send_json_to({"type": "answer", "call_id": asked["call_id"], "text": "blue"})
    frames = await _finish(socket)
    finished = next(f for f in frames if f["type"] == "tool_finished")
    assert finished["preview"] == "user picked blue"
    await socket.disconnect()


async def test_stop_cancels_a_running_tool_promptly(conversation, alice_cookie, chat_tools):
    socket, _, _ = await open_socket(conversation, alice_cookie)
    await socket.send_json_to({"type": "user_message", "text": "/ticker seconds=60"})
    await receive_until(socket, of_type("tool_update"))
    started = asyncio.get_running_loop().time()
    await socket.send_json_to({"type": "stop"})
    frames = await _finish(socket)
    assert asyncio.get_running_loop().time() - started < 5
    assert frames[-1]["status"] == "stopped"
    run = await _run_record(frames[-1]["run_id"])
    assert run.status == "stopped" and run.finished is not None
    await socket.disconnect()


async def test_malformed_frames_get_an_error_and_the_socket_stays_open(
    conversation, alice_cookie, chat_tools
):
    socket, _, _ = await open_socket(conversation, alice_cookie)
    bad_frames = [
        ("not json {", "bad_json"),
        (json.dumps({"type": "launch_rockets"}), "bad_frame"),
        (json.dumps({"type": "approve"}), "bad_frame"),
        (json.dumps(["a", "list"]), "bad_frame"),
        (json.dumps({"type": "user_message", "text": ""}), "bad_frame"),
    ]
    for raw, kind in bad_frames:
        await socket.send_to(text_data=raw)
        error = await socket.receive_json_from(timeout=30)
        assert (error["type"], error["kind"]) == ("error", kind), raw[:40]
        assert error["message"]
    await socket.send_to(bytes_data=b"\x00\x01")
    assert (await socket.receive_json_from(timeout=30))["kind"] == "bad_frame"
    await socket.send_json_to({"type": "user_message", "text": "/echo_twice text=ok"})
    frames = await _finish(socket)
    assert frames[-1]["status"] == "completed"
    await socket.disconnect()


async def test_an_oversize_frame_gets_an_error_frame_then_close_4413(conversation, alice_cookie):
    socket, _, _ = await open_socket(conversation, alice_cookie)
    await socket.send_to(text_data=json.dumps({"type": "user_message", "text": "x" * 70_000}))
    error = await socket.receive_json_from(timeout=30)
    assert (error["type"], error["kind"]) == ("error", "too_large")
    assert "65536-byte limit" in error["message"]
    assert await close_code(socket) == CLOSE_TOO_LARGE
    assert not await database_sync_to_async(Run.objects.exists)()


async def test_a_second_message_while_a_turn_runs_is_refused(
    conversation, alice_cookie, chat_tools
):
    socket, _, _ = await open_socket(conversation, alice_cookie)
    await socket.send_json_to({"type": "user_message", "text": "/ticker seconds=60"})
    await receive_until(socket, of_type("tool_call_started"))
    await socket.send_json_to({"type": "user_message", "text": "me too"})
    error = (await receive_until(socket, lambda f: f["type"] == "error" and "run_id" not in f))[-1]
    assert error["kind"] == "conflict" and "already running" in error["message"]
    await socket.send_json_to({"type": "stop"})
    await _finish(socket)
    await socket.disconnect()


async def test_a_tool_failure_shows_as_an_error_and_the_socket_lives_on(
    conversation, alice_cookie, chat_tools
):
    socket, _, _ = await open_socket(conversation, alice_cookie)
    await socket.send_json_to({"type": "user_message", "text": "/broken text=now"})
    frames = await _finish(socket)
    finished = next(f for f in frames if f["type"] == "tool_finished")
    assert finished["is_error"] and "broken tool refused" in finished["preview"]
    await socket.send_json_to({"type": "user_message", "text": "/echo_twice text=z"})
    frames = await _finish(socket)
    assert frames[-1]["status"] == "completed"
    await socket.disconnect()


async def test_a_model_that_is_not_offered_is_refused_clearly(conversation, alice_cookie):
    socket, _, _ = await open_socket(conversation, alice_cookie)
    await socket.send_json_to({"type": "user_message", "text": "hi", "model": "nope/model"})
    error = await socket.receive_json_from(timeout=30)
    assert error["type"] == "error" and "'nope/model' is not offered" in error["message"]
    await socket.disconnect()


async def test_the_turn_finishes_in_history_after_the_tab_disconnects(
    conversation, alice_cookie, chat_tools
):
    socket, _, _ = await open_socket(conversation, alice_cookie)
    await socket.send_json_to({"type": "user_message", "text": "/ticker seconds=0.5"})
    started = (await receive_until(socket, of_type("tool_call_started")))[-1]
    await socket.disconnect()

    run_id = started["run_id"]
    deadline = asyncio.get_running_loop().time() + 60
    while (run := await _run_record(run_id)).status == "running":
        assert asyncio.get_running_loop().time() < deadline, "the turn never finished"
        await asyncio.sleep(0.05)
    assert run.status == "completed"
    assert "ticked" in run.text

    socket, _, _ = await open_socket(conversation, alice_cookie)
    catch_up = await socket.receive_json_from(timeout=30)
    assert catch_up["type"] == "catch_up" and catch_up["run_id"] == run_id
    kinds = [e["type"] for e in catch_up["events"]]
    assert kinds[0] == "user_message" and kinds[-1] == "assistant_message"
    assert "tool_finished" in kinds
    await socket.disconnect()


async def test_a_second_tab_sees_the_same_stream(conversation, alice_cookie, chat_tools):
    first, _, _ = await open_socket(conversation, alice_cookie)
    second, _, _ = await open_socket(conversation, alice_cookie)
    await first.send_json_to({"type": "user_message", "text": "/guarded text=both"})
    asked = (await receive_until(second, of_type("approval_requested")))[-1]
    # The second tab answers; the first tab sees the outcome too.
    await second.send_json_to({"type": "approve", "call_id": asked["call_id"]})
    first_frames = await _finish(first)
    second_frames = await _finish(second)
    assert [f["seq"] for f in first_frames][-len(second_frames) :] == [
        f["seq"] for f in second_frames
    ]
    assert any(f["type"] == "tool_finished" and not f["is_error"] for f in first_frames)
    await first.disconnect()
    await second.disconnect()


async def test_a_reloaded_tab_catches_up_on_a_running_turn(conversation, alice_cookie, chat_tools):
    first, _, _ = await open_socket(conversation, alice_cookie)
    await first.send_json_to({"type": "user_message", "text": "/ticker seconds=60"})
    await receive_until(first, of_type("tool_update"))
    reloaded, _, _ = await open_socket(conversation, alice_cookie)
    catch_up = await reloaded.receive_json_from(timeout=30)
    assert catch_up["status"] == "running"
    kinds = [e["type"] for e in catch_up["events"]]
    assert kinds[:2] == ["user_message", "tools_resolved"] and "tool_update" in kinds
    await reloaded.send_json_to({"type": "stop"})
    frames = await _finish(reloaded)
    assert frames[-1]["seq"] > catch_up["events"][-1]["seq"]
    await _finish(first)
    await first.disconnect()
    await reloaded.disconnect()


async def test_streamed_text_is_persisted_coalesced_not_per_delta(
    conversation, alice_cookie, chat_tools
):
    socket, _, _ = await open_socket(conversation, alice_cookie)
    await socket.send_json_to({"type": "user_message", "text": "list your tools please"})
    frames = await _finish(socket)
    run_id = frames[-1]["run_id"]
    live_deltas = [f for f in frames if f["type"] == "text_delta"]
    stored = await database_sync_to_async(
        lambda: list(RunEvent.objects.filter(run_id=run_id, type="text_delta"))
    )()
    text = "".join(f["text"] for f in live_deltas)
    pieces_streamed = -(-len(text) // CHUNK_CHARS)  # the offline model's pieces
    assert pieces_streamed > 1
    assert len(stored) < pieces_streamed
    assert "".join(e.payload["text"] for e in stored) == text
    await socket.disconnect()


async def test_a_tab_opened_mid_stream_has_every_piece_once_from_catch_up_and_live(
    conversation, alice_cookie, chat_tools
):
    first, _, _ = await open_socket(conversation, alice_cookie)
    await first.send_json_to({"type": "user_message", "text": "/ticker seconds=0.6"})
    everything = await receive_until(first, of_type("tool_update"))
    late, _, _ = await open_socket(conversation, alice_cookie)
    catch_up = await late.receive_json_from(timeout=30)
    live = await _finish(late)
    last = catch_up["events"][-1]["seq"]
    seen = catch_up["events"] + [_unseen_part(f, last) for f in live if f["seq"] > last]
    everything += await _finish(first)

    def ticks(events):
        return "".join(e["text"] for e in events if e["type"] == "tool_update")

    assert catch_up["status"] == "running" and ticks(catch_up["events"])
    assert ticks(seen) == ticks(everything)
    assert ticks(everything).endswith(f"tick {ticks(everything).count('tick')}\n")
    await first.disconnect()
    await late.disconnect()


def _unseen_part(frame: dict, last: int) -> dict:
    """What the page renders of a live frame after a catch-up ending at ``last``
    (static/js/chat-transcript.js: the pieces a merged frame lists up to ``last`` skipped)."""
    parts = frame.get("parts") or []
    skip = sum(length for seq, length in parts if seq <= last)
    return {**frame, "text": frame.get("text", "")[skip:]}


async def test_a_tab_joining_while_pieces_wait_in_the_relay_window_shows_each_once(
    conversation, alice_cookie, chat_tools, monkeypatch
):
    # The window stays open until the tool ends: every tick after the first waits in it,
    # those before the late tab's catch-up as well as those after it.
    monkeypatch.setattr(relay_module, "RELAY_WINDOW_SECONDS", 600.0)
    first, _, _ = await open_socket(conversation, alice_cookie)
    await first.send_json_to({"type": "user_message", "text": "/ticker seconds=3"})
    # The first tick goes out with the call's start; the second alone, opening the window.
    everything = await receive_until(first, of_type("tool_update"))
    everything += await receive_until(first, of_type("tool_update"))
    opener = everything[-1]["seq"]
    turn = active_turn(conversation.pk)
    async with asyncio.timeout(60):  # more ticks emitted since: they wait in the window
        while turn.seq < opener + 3:
            await asyncio.sleep(0.01)
    late, _, _ = await open_socket(conversation, alice_cookie)
    catch_up = await late.receive_json_from(timeout=30)
    live = await _finish(late)
    everything += await _finish(first)

    def ticks(events):
        return "".join(e["text"] for e in events if e["type"] == "tool_update")

    last = catch_up["events"][-1]["seq"]
    straddling = [f for f in live if f.get("parts") and f["parts"][0][0] <= last < f["seq"]]
    assert straddling, "the case under test: a merged frame beginning with caught-up pieces"
    shown = catch_up["events"] + [_unseen_part(f, last) for f in live if f["seq"] > last]
    assert ticks(shown) == ticks(everything)
    assert ticks(everything).endswith(f"tick {ticks(everything).count('tick')}\n")
    await first.disconnect()
    await late.disconnect()
