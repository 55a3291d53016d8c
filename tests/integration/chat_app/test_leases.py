"""Run leases (chat_app.leases): a turn whose server died stops blocking its conversation.

The socket tests run on the Redis channel layer (a real redis-server), where a run
marked running may belong to another process: only its lease says whether it is alive.
"""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import pytest
from channels.db import database_sync_to_async
from django.db import transaction
from django.utils import timezone

from chat_app import turn_store
from chat_app.models import Message, Run, RunEvent
from chat_app.turn_store import ORPHANED_RUN_ERROR, run_expire_orphans
from tests.integration.chat_app.conftest import of_type, open_socket, receive_until

pytestmark = pytest.mark.django_db(transaction=True)


def _running_run(conversation, *, lease_seconds: float) -> Run:
    return Run.objects.create(
        conversation=conversation,
        model="offline",
        status="running",
        lease_until=timezone.now() + timedelta(seconds=lease_seconds),
    )


def test_an_expired_lease_is_closed_as_orphaned_keeping_the_streamed_text(conversation):
    run = _running_run(conversation, lease_seconds=-1)
    RunEvent.objects.create(run=run, seq=1, type="text_delta", payload={"text": "half an "})
    RunEvent.objects.create(run=run, seq=2, type="text_delta", payload={"text": "answer"})
    assert run_expire_orphans(conversation_id=conversation.pk) == 1
    run.refresh_from_db()
    assert (run.status, run.error, run.text) == ("error", ORPHANED_RUN_ERROR, "half an answer")
    assert run.finished is not None and run.lease_until is None
    assert Message.objects.get(run=run, role="assistant").text == "half an answer"


def test_a_fresh_lease_is_left_running(conversation):
    run = _running_run(conversation, lease_seconds=30)
    assert run_expire_orphans(conversation_id=conversation.pk) == 0
    run.refresh_from_db()
    assert run.status == "running" and run.error == ""


async def test_renewing_moves_the_lease_forward_only_while_the_run_is_running(
    conversation, settings
):
    settings.CHAT_RUN_LEASE_SECONDS = 60
    run = await database_sync_to_async(_running_run)(conversation, lease_seconds=1)
    assert await turn_store.renew_lease(run_id=run.pk)
    await run.arefresh_from_db()
    assert run.lease_until > timezone.now() + timedelta(seconds=50)
    await Run.objects.filter(pk=run.pk).aupdate(status="error")
    assert not await turn_store.renew_lease(run_id=run.pk)


def test_a_page_load_closes_a_run_whose_lease_expired(alice_client, conversation):
    run = _running_run(conversation, lease_seconds=-1)
    response = alice_client.get(f"/c/{conversation.public_id}/")
    assert response.status_code == 200
    run.refresh_from_db()
    assert run.status == "error" and run.error == ORPHANED_RUN_ERROR
    assert ORPHANED_RUN_ERROR in response.content.decode()


def test_the_runs_api_closes_a_run_whose_lease_expired(alice_client, conversation):
    run = _running_run(conversation, lease_seconds=-1)
    runs = alice_client.get(f"/api/conversations/{conversation.public_id}/runs").json()
    assert [(r["id"], r["status"], r["error"]) for r in runs] == [
        (run.pk, "error", ORPHANED_RUN_ERROR)
    ]


# --- over the socket, on the Redis channel layer ---------------------------------------------

socket_marks = pytest.mark.usefixtures(
    "asgi_application", "no_leftover_turns", "redis_channel_layer"
)


async def _create_running(conversation, lease_seconds: float) -> Run:
    return await database_sync_to_async(_running_run)(conversation, lease_seconds=lease_seconds)


async def _reload(run: Run) -> Run:
    return await database_sync_to_async(Run.objects.get)(pk=run.pk)


@socket_marks
async def test_a_new_message_takes_over_from_a_run_whose_lease_expired(
    conversation, alice_cookie, chat_tools
):
    socket, connected, _ = await open_socket(conversation, alice_cookie)
    assert connected
    stale = await _create_running(conversation, lease_seconds=-1)
    await socket.send_json_to({"type": "user_message", "text": "/echo_twice text=hi"})
    frames = await receive_until(socket, of_type("assistant_message"))
    assert frames[-1]["status"] == "completed" and frames[-1]["run_id"] != stale.pk
    stale = await _reload(stale)
    assert (stale.status, stale.error) == ("error", ORPHANED_RUN_ERROR)
    await socket.disconnect()


@socket_marks
async def test_a_run_with_a_live_lease_still_blocks_with_a_clear_error_frame(
    conversation, alice_cookie, chat_tools
):
    live = await _create_running(conversation, lease_seconds=60)
    socket, connected, _ = await open_socket(conversation, alice_cookie)
    assert connected
    catch_up = await socket.receive_json_from(timeout=30)
    assert (catch_up["type"], catch_up["status"]) == ("catch_up", "running")
    await socket.send_json_to({"type": "user_message", "text": "/echo_twice text=hi"})
    error = await socket.receive_json_from(timeout=30)
    assert error["type"] == "error" and error["kind"] == "conflict"
    assert "already running" in error["message"]
    live = await _reload(live)
    assert live.status == "running"
    count = await database_sync_to_async(Run.objects.filter(conversation=conversation).count)()
    assert count == 1
    await socket.disconnect()


@socket_marks
async def test_the_catch_up_on_connect_closes_a_run_whose_lease_expired(conversation, alice_cookie):
    stale = await _create_running(conversation, lease_seconds=-1)
    socket, connected, _ = await open_socket(conversation, alice_cookie)
    assert connected
    catch_up = await socket.receive_json_from(timeout=30)
    assert (catch_up["type"], catch_up["run_id"], catch_up["status"]) == (
        "catch_up",
        stale.pk,
        "error",
    )
    await socket.disconnect()


async def _wait_for(predicate, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not await predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.05)


@socket_marks
async def test_a_running_turn_keeps_renewing_its_lease(
    conversation, alice_cookie, chat_tools, settings
):
    # Renewed every second: the lease lapses only if the process stalls for two of them.
    settings.CHAT_RUN_LEASE_SECONDS = 3
    socket, _, _ = await open_socket(conversation, alice_cookie)
    await socket.send_json_to({"type": "user_message", "text": "/ticker seconds=60"})
    started = await receive_until(socket, of_type("tool_call_started"))
    run_id = started[-1]["run_id"]
    first = (await _reload(Run(pk=run_id))).lease_until

    async def renewed_twice() -> bool:
        lease = (await _reload(Run(pk=run_id))).lease_until
        return lease is not None and lease > first + timedelta(seconds=1.5)

    # Renewals kept the run's lease ahead of the clock: the run is still live.
    await _wait_for(renewed_twice)
    assert await database_sync_to_async(run_expire_orphans)(conversation_id=conversation.pk) == 0
    await socket.send_json_to({"type": "stop"})
    frames = await receive_until(socket, of_type("assistant_message"))
    assert frames[-1]["status"] == "stopped"
    assert (await _reload(Run(pk=run_id))).lease_until is None
    await socket.disconnect()


@socket_marks
async def test_a_turn_whose_run_was_closed_as_orphaned_stops_itself(
    conversation, alice_cookie, chat_tools, settings
):
    settings.CHAT_RUN_LEASE_SECONDS = 1
    socket, _, _ = await open_socket(conversation, alice_cookie)
    await socket.send_json_to({"type": "user_message", "text": "/ticker seconds=60"})
    run_id = (await receive_until(socket, of_type("tool_update")))[-1]["run_id"]

    def stall_past_the_lease_and_close() -> int:
        """As another process does when this one stalled past its lease; in one
        transaction, so this turn's next renewal cannot land in between."""
        with transaction.atomic():
            Run.objects.filter(pk=run_id).update(lease_until=timezone.now() - timedelta(seconds=1))
            return run_expire_orphans(conversation_id=conversation.pk)

    assert await database_sync_to_async(stall_past_the_lease_and_close)() == 1
    frames = await receive_until(socket, of_type("assistant_message"), timeout=60)
    run = await _reload(Run(pk=run_id))
    # The closing verdict stands: the turn did not reopen the run as stopped or completed.
    assert (run.status, run.error) == ("error", ORPHANED_RUN_ERROR)
    assert frames[-1]["status"] == "error"
    await socket.disconnect()
