"""Driving a real daphne's chat socket as a signed-in user: one turn, approvals granted."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from websockets.asyncio.client import connect

from tests.servers import DaphneServer

__all__ = ["ChatSession", "chat_sessions", "turn_frames"]

_SETUP = """
import json
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client
from chat_app.selectors import workspace_for
from chat_app.services import conversation_create
sessions = {{}}
for username in {usernames!r}:
    user = get_user_model().objects.get(username=username)
    client = Client()
    client.force_login(user)
    conversation = conversation_create(owner=user, model="offline")
    sessions[username] = {{
        "cookie": settings.SESSION_COOKIE_NAME + "=" + client.cookies[settings.SESSION_COOKIE_NAME].value,
        "conversation": str(conversation.public_id),
        "workspace": str(workspace_for(user=user)),
    }}
print("SETUP=" + json.dumps(sessions))
"""


@dataclass(frozen=True)
class ChatSession:
    url: str
    origin: str
    cookie: str
    workspace: str


def chat_sessions(server: DaphneServer, *usernames: str) -> dict[str, ChatSession]:
    """Signed-in sessions, each with a new offline-model conversation (one manage.py run)."""
    output = server.shell(_SETUP.format(usernames=list(usernames)))
    line = next(row for row in output.splitlines() if row.startswith("SETUP="))
    return {
        username: ChatSession(
            url=f"ws://127.0.0.1:{server.port}/ws/chat/{setup['conversation']}/",
            origin=server.url,
            cookie=setup["cookie"],
            workspace=setup["workspace"],
        )
        for username, setup in json.loads(line.removeprefix("SETUP=")).items()
    }


async def turn_frames(
    session: ChatSession, text: str, *, stop_at: str = "turn_finished", timeout: float = 30
) -> list[dict[str, Any]]:
    """Send ``text``, approve every approval request, return the frames up to ``stop_at``.

    ``stop_at`` is a frame type, or ``"tool_update:<text>"`` to stop once a tool's streamed
    output contains ``<text>`` (the command is then still running).
    """
    frames: list[dict[str, Any]] = []
    async with connect(
        session.url, origin=session.origin, additional_headers={"Cookie": session.cookie}
    ) as ws:
        await ws.send(json.dumps({"type": "user_message", "text": text}))
        while True:
            frame = json.loads(await asyncio.wait_for(ws.recv(), timeout))
            frames.append(frame)
            if frame["type"] == "approval_requested":
                await ws.send(json.dumps({"type": "approve", "call_id": frame["call_id"]}))
            if stop_at.startswith("tool_update:"):
                if frame["type"] == "tool_update" and stop_at[12:] in frame.get("text", ""):
                    return frames
                if frame["type"] in ("error", "turn_finished"):
                    raise AssertionError(f"the command did not start: {frame}")
            elif frame["type"] == stop_at:
                return frames
