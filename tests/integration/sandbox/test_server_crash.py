"""kill -9 of a real daphne mid-call leaves no tool process alive (checked in /proc)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid

import pytest

from openprogram.security.sandbox import sandbox_problem
from tests.integration.sandbox.chat_socket import chat_sessions, turn_frames
from tests.processes import live_processes_with
from tests.servers import make_server

pytestmark = pytest.mark.skipif(sandbox_problem() is not None, reason="no sandbox here")


def _wait_for(condition, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def test_kill_9_of_the_server_kills_every_sandboxed_process(tmp_path):
    server = make_server(tmp_path / "home")
    server.create_users()
    server.start()
    try:
        alice = chat_sessions(server, "alice")["alice"]
        marker = f"600.{uuid.uuid4().int % 10**9:09d}"
        # One plain background job, one that left the session (setsid): both must die.
        detached = f"setsid -f sleep {marker} >/dev/null 2>&1 </dev/null"
        command = f"sleep {marker} & {detached}; echo started; wait"
        asyncio.run(turn_frames(alice, f"/bash {command}", stop_at="tool_update:started"))
        assert _wait_for(lambda: len(live_processes_with(marker)) == 2), "the command never ran"

        os.kill(server.proc.pid, signal.SIGKILL)
        server.proc.wait(timeout=10)

        assert _wait_for(lambda: not live_processes_with(marker)), (
            f"tool processes outlived the server: {live_processes_with(marker)}"
        )
    finally:
        server.stop()
