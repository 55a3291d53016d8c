"""kill -9 of a real daphne mid-call leaves no tool process alive (checked in /proc)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
import uuid

import pytest
from websockets.asyncio.client import connect

from openprogram.security.sandbox import sandbox_problem
from tests.processes import live_processes_with
from tests.servers import make_server

pytestmark = pytest.mark.skipif(sandbox_problem() is not None, reason="no sandbox here")

_SETUP = """
import json
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client
from chat_app.services import conversation_create
user = get_user_model().objects.get(username="alice")
client = Client()
client.force_login(user)
conversation = conversation_create(owner=user, model="offline")
print("SETUP=" + json.dumps({
    "cookie": settings.SESSION_COOKIE_NAME + "=" + client.cookies[settings.SESSION_COOKIE_NAME].value,
    "conversation": str(conversation.public_id),
}))
"""


def _wait_for(condition, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


async def _start_approved_command(url: str, origin: str, cookie: str, command: str) -> None:
    headers = {"Cookie": cookie}
    async with connect(url, origin=origin, additional_headers=headers) as ws:
        await ws.send(json.dumps({"type": "user_message", "text": f"/bash {command}"}))
        while True:
            frame = json.loads(await asyncio.wait_for(ws.recv(), 30))
            if frame["type"] == "approval_requested":
                await ws.send(json.dumps({"type": "approve", "call_id": frame["call_id"]}))
            elif frame["type"] == "tool_update" and "started" in frame.get("text", ""):
                return
            elif frame["type"] in ("error", "turn_finished"):
                raise AssertionError(f"the command did not start: {frame}")


def test_kill_9_of_the_server_kills_every_sandboxed_process(tmp_path):
    server = make_server(tmp_path / "home")
    server.create_users()
    server.start()
    try:
        line = next(r for r in server.shell(_SETUP).splitlines() if r.startswith("SETUP="))
        alice = json.loads(line.removeprefix("SETUP="))
        marker = f"600.{uuid.uuid4().int % 10**9:09d}"
        command = f"sleep {marker} & sleep {marker} & echo started; wait"
        asyncio.run(
            _start_approved_command(
                f"ws://127.0.0.1:{server.port}/ws/chat/{alice['conversation']}/",
                server.url,
                alice["cookie"],
                command,
            )
        )
        assert _wait_for(lambda: len(live_processes_with(marker)) == 2), "the command never ran"

        os.kill(server.proc.pid, signal.SIGKILL)
        server.proc.wait(timeout=10)

        assert _wait_for(lambda: not live_processes_with(marker)), (
            f"tool processes outlived the server: {live_processes_with(marker)}"
        )
    finally:
        server.stop()
