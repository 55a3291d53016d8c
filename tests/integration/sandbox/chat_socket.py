"""Driving a real daphne's chat socket as a signed-in user: one turn, approvals granted."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from websockets.asyncio.client import connect

from tests.servers import DaphneServer
from tests.signed_in import SignedIn, sign_in

__all__ = ["ChatSession", "chat_session", "chat_sessions", "turn_frames"]


@dataclass(frozen=True)
class ChatSession:
    url: str
    origin: str
    cookie: str
    workspace: str


def chat_sessions(server: DaphneServer, *usernames: str) -> dict[str, ChatSession]:
    """A new signed-in session for each user (the login form), each with a new
    offline-model conversation (the API)."""
    sessions = {}
    for username in usernames:
        person = sign_in(server, username)
        sessions[username] = chat_session(person, person.conversation())
    return sessions


def chat_session(person: SignedIn, conversation: str) -> ChatSession:
    """``person``'s session on the socket of their ``conversation`` (a public id)."""
    return ChatSession(
        url=f"ws://127.0.0.1:{person.server.port}/ws/chat/{conversation}/",
        origin=person.server.url,
        cookie=person.cookie,
        workspace=str(person.workspace),
    )


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
