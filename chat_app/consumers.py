"""The conversation socket, ``/ws/chat/<public id>/``: relay a turn's events, take input.

A foreign Origin never gets here (close 4403 in ``openprogram_site/origins.py``). The
ownership check comes before anything else: an anonymous user is closed with 4401 and
anyone but the conversation's owner with 4404 (as if it did not exist). Both are sent
after accepting the handshake, so a browser sees the code (a refused handshake shows
as 1006). On connect it sends a catch-up of the latest run from history, then joins
the conversation's group so every event of a running turn arrives live; the browser
drops what it already has by ``seq``. A frame it cannot use (bad JSON, unknown type,
missing field) gets an error frame and the socket stays; a frame over 64 KB gets an
error frame and close 4413 (daphne's own 1 MB limit answers the same way,
``openprogram_site/daphne_patches.py``).

The socket lives only as long as its login (``accounts/session_revocation.py``): it joins
its user's group, and on every ``session.check`` sent there (logout, a deleted session,
deactivation, a password change) it loads its session afresh and closes with 4401 if
that no longer logs its user in. A turn start re-checks too when the last check is older
than ``SESSION_RECHECK_SECONDS``, and every approval, answer and elicitation reply
re-checks always, so a socket that missed a message still cannot act.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from channels.consumer import get_handler_name
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from pydantic import ValidationError

from accounts.session_revocation import key_digest, session_user, user_group
from chat_app import turn_store
from chat_app.schemas import MAX_FRAME_BYTES, TurnOptions, UserMessageFrame, parse_client_frame
from chat_app.turns import (
    active_turn,
    events_group,
    single_process_layer,
    turn_control_send,
    turn_in_flight,
    turn_start,
    turn_started_since,
    turns_started,
)
from core.api_errors import DomainError
from core.consumer_loop import ConsumerLoop
from core.socket_frames import CLOSE_TOO_LARGE, FRAME_WRITER, FrameWriter, too_large_frame

__all__ = ["CLOSE_NOT_FOUND", "CLOSE_UNAUTHENTICATED", "ChatConsumer"]

_log = logging.getLogger(__name__)

CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_FOUND = 4404
# A turn start trusts a session check this recent; approvals always check afresh.
SESSION_RECHECK_SECONDS = 5.0
# Frames that let a tool act (or answer for the user): each re-checks the session first.
_FULL_CHECK_FRAMES = frozenset({"approve", "answer", "elicit"})


def _error_text(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors()[:5]:
        where = ".".join(str(p) for p in error.get("loc", ()) if p != "type") or "frame"
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return "; ".join(parts)


class ChatConsumer(ConsumerLoop, AsyncJsonWebsocketConsumer):
    # ConsumerLoop (core/consumer_loop.py): Channels' delivery, a message handled in the
    # turn it arrives.
    conversation_id: int
    group: str
    user_group: str = ""
    session_key: str | None = None
    session_checked_at: float = 0.0

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self._refuse(CLOSE_UNAUTHENTICATED)
            return
        public_id = self.scope["url_route"]["kwargs"]["public_id"]
        # One process and no turn of the conversation in flight (started, events not
        # all written): nothing can reach its group until a turn starts, so the
        # catch-up is read with the ownership check, in one statement (chat_app.turn_store.connect).
        # If a turn is in flight, or one of this conversation started before the group
        # was joined, it is read again below, after joining (as always with several
        # processes): the socket then misses nothing, as history or the group has every
        # event.
        starts = turns_started()
        # Batched with the running turns' jobs: a burst of connects shares thread hops.
        owned, catch_up = await turn_store.connect(
            owner_id=user.pk,
            public_id=public_id,
            catch_up=single_process_layer(),
        )
        if owned is None:
            await self._refuse(CLOSE_NOT_FOUND)
            return
        self.conversation_id = owned
        self.session_key = self.scope["session"].session_key
        self.session_checked_at = time.monotonic()
        # A login ended between the middleware's check and this join is caught by the
        # next action's re-check (SESSION_RECHECK_SECONDS; approvals always).
        self.user_group = user_group(user.pk)
        await self.channel_layer.group_add(self.user_group, self.channel_name)
        self.group = events_group(self.conversation_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        stale = turn_started_since(owned, starts) or turn_in_flight(owned)
        if catch_up is turn_store.NOT_READ or stale:
            turn = active_turn(self.conversation_id)
            if turn is not None:
                # Streamed text waits in a buffer between writes; history must have it first.
                await turn.flush()
            _, catch_up = await turn_store.connect(
                owner_id=user.pk,
                public_id=public_id,
                catch_up=True,
                even_in_flight=True,
            )
        # None: no run yet; NOT_READ after the second read: the conversation is gone.
        if catch_up is not None and catch_up is not turn_store.NOT_READ:
            await self.send_json(catch_up)

    async def _refuse(self, code: int) -> None:
        """Accept, then close with ``code``: nothing is sent, and the browser sees why."""
        await self.accept()
        await self.close(code=code)

    async def disconnect(self, code: int) -> None:
        # The turn keeps running: it belongs to the conversation, not to this socket.
        if getattr(self, "group", None):
            await self.channel_layer.group_discard(self.group, self.channel_name)
        if self.user_group:
            await self.channel_layer.group_discard(self.user_group, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if bytes_data is not None or text_data is None:
            await self._error("bad_frame", "send JSON text frames, not binary")
            return
        size = len(text_data.encode())
        if size > MAX_FRAME_BYTES:
            await self.send_json(too_large_frame(size=size, limit=MAX_FRAME_BYTES))
            await self.close(code=CLOSE_TOO_LARGE)
            return
        try:
            data = json.loads(text_data)
        except ValueError as exc:
            await self._error("bad_json", f"not JSON: {exc}")
            return
        except RecursionError:  # e.g. 5,000 nested arrays: 10 KB, well under the size limit
            await self._error("bad_json", "not JSON this server reads: nested too deeply")
            return
        if not isinstance(data, dict):
            await self._error("bad_frame", "a frame must be a JSON object with a 'type'")
            return
        try:
            frame = parse_client_frame(data)
        except ValidationError as exc:
            await self._error(
                "bad_frame", f"{data.get('type')!r} frame rejected: {_error_text(exc)}"
            )
            return
        try:
            await self._handle(frame)
        except DomainError as exc:
            await self._error(type(exc).__name__.removesuffix("Error").lower(), exc.message)
        except Exception as exc:
            _log.exception("chat frame %r failed", data.get("type"))
            await self._error("internal", f"could not handle {data.get('type')!r}: {exc}")

    async def _session_valid(self, *, full: bool) -> bool:
        """Does this socket's session still log its user in? (re-read unless recent)"""
        if not full and time.monotonic() - self.session_checked_at < SESSION_RECHECK_SECONDS:
            return True
        user = await session_user(self.session_key)
        if user is None or user.pk != self.scope["user"].pk:
            return False
        self.scope["user"] = user  # e.g. its new password hash after a change of its own
        self.session_checked_at = time.monotonic()
        return True

    async def session_check(self, message: dict[str, Any]) -> None:
        """A login of this user may have ended: close with 4401 unless this one stands."""
        new_key = (message.get("rekeyed") or {}).get(key_digest(self.session_key or ""))
        if new_key:  # this session changed its own password: follow its new key
            self.session_key = new_key
        if not await self._session_valid(full=True):
            await self.close(code=CLOSE_UNAUTHENTICATED)

    async def _handle(self, frame: Any) -> None:
        if not await self._session_valid(full=frame.type in _FULL_CHECK_FRAMES):
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        user = self.scope["user"]
        if isinstance(frame, UserMessageFrame):
            options = frame.model_dump(exclude={"type", "text", "attended", "replaces"})
            await turn_start(
                user=user,
                conversation_id=self.conversation_id,
                text=frame.text,
                options=TurnOptions(**options, attended=frame.attended),
                attended=frame.attended,
                replaces=frame.replaces,
            )
            return
        await turn_control_send(
            conversation_id=self.conversation_id,
            user_id=user.pk,
            action=frame.type,
            call_id=getattr(frame, "call_id", ""),
            reason=getattr(frame, "reason", ""),
            text=getattr(frame, "text", ""),
            remember=bool(getattr(frame, "remember", False)),
            always_allow=getattr(frame, "always_allow", ""),
            choice=getattr(frame, "action", ""),
            content=getattr(frame, "content", None),
        )
        if frame.type == "stop" and active_turn(self.conversation_id) is None:
            if single_process_layer():
                await turn_store.close_orphans(
                    conversation_id=self.conversation_id,
                    every_running=True,
                    reason="stopped; no turn was running",
                )
            else:
                await turn_store.close_orphans(
                    conversation_id=self.conversation_id, every_running=False
                )

    async def _error(self, kind: str, message: str) -> None:
        await self.send_json({"type": "error", "kind": kind, "message": message})

    async def dispatch(self, message: dict[str, Any]) -> None:
        # Channels closes stale database connections before every message it dispatches,
        # a hop to its database thread each time (three a turn: connect, the message,
        # disconnect; on SQLite the thread the batches run on). Nothing here touches the
        # database but through chat_app.turn_store and Channels' get_user (the session
        # re-check, database_sync_to_async), which close stale connections around each
        # call themselves, so every message skips that hop.
        if message.get("type") == "chat.events":
            await self.chat_events(message)
            return
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)

    async def chat_events(self, message: dict[str, Any]) -> None:
        """A turn's relayed events: frames the relay encoded once for every tab, each written
        at once by the server's frame writer when it has one (``core.socket_frames``)."""
        writer: FrameWriter | None = self.scope.get(FRAME_WRITER)
        for frame in message["frames"]:
            if writer is None or not writer.write_text(frame):
                await self.base_send({"type": "websocket.send", "text": frame})
