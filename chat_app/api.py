"""Conversations and run history over JSON, and unattended turns for scripts.

Mounted at ``/api/``. Another user's conversation or run answers 404. A conversation
is named by its random ``public_id`` (a UUID), never by its database key.
"""

from __future__ import annotations

import asyncio
from typing import Any

from asgiref.sync import sync_to_async
from django.http import HttpRequest
from ninja import File, Router, Schema, Status
from ninja.files import UploadedFile

from audit_app.recording import audit_channel
from chat_app import turn_store
from chat_app.attachments import attachment_save
from chat_app.models import Conversation, Run, ToolCallRecord
from chat_app.schemas import (
    ConversationIn,
    ConversationOut,
    ConversationPatch,
    RunDetailOut,
    RunOut,
    TurnIn,
    TurnOptions,
    TurnOut,
)
from chat_app.selectors import (
    conversation_by_public_id,
    conversation_list,
    run_events,
    run_explain_groups,
    run_explain_rows,
    run_get,
    run_list,
)
from chat_app.services import (
    conversation_apply_options,
    conversation_create,
    conversation_delete,
    conversation_rename,
)
from chat_app.sidebar import conversation_search
from chat_app.turn_store import run_expire_orphans
from chat_app.turns import turn_control_send, turn_run_to_completion

__all__ = ["router"]

router = Router(tags=["chat"])

# How often an API turn re-checks the token that started it (one indexed statement).
TOKEN_RECHECK_SECONDS = 2.0


def _conversation_out(c: Conversation) -> dict[str, Any]:
    return {
        "id": str(c.public_id),
        "title": c.title,
        "profile": c.profile_name,
        "model": c.model,
        "agent_profile": c.agent_profile_id,
        "tools_on": c.tools_on,
        "web_search_on": c.web_search_on,
        "plan_mode": c.plan_mode,
        "attended": c.attended,
        "todos": c.todos,
        "created": c.created,
        "updated": c.updated,
    }


def _run_out(run: Run) -> dict[str, Any]:
    return {
        "id": run.pk,
        "conversation": str(run.conversation.public_id),
        "status": run.status,
        "model": run.model,
        "profile": run.profile_name,
        "attended": run.attended,
        "options": run.options,
        "tools": run.tools,
        "deferred": run.deferred,
        "warnings": run.warnings,
        "usage": run.usage,
        "text": run.text,
        "error": run.error,
        "started": run.started,
        "finished": run.finished,
    }


def _tool_call_out(record: ToolCallRecord) -> dict[str, Any]:
    return {
        "call_id": record.call_id,
        "name": record.name,
        "arguments": record.arguments,
        "status": record.status,
        "result_preview": record.result_preview,
        "is_error": record.is_error,
        "truncated": record.truncated,
        "has_full_result": bool(record.full_result_path),
        "duration_ms": record.duration_ms,
        "parent_call_id": record.parent_call_id,
    }


@router.get("/conversations", response=list[ConversationOut], summary="Your conversations")
def conversations_list(request: HttpRequest, q: str = ""):
    """All of them, newest first; with ``q``, the 50 newest whose title or messages match."""
    if q.strip():
        return [_conversation_out(c) for c in conversation_search(owner=request.user, query=q)]
    return [_conversation_out(c) for c in conversation_list(owner=request.user)]


class AttachmentOut(Schema):
    path: str
    """Relative to your workspace: the file tools (read, grep, bash) open it by this path."""
    name: str
    size: int


@router.post(
    "/attachments",
    response={201: AttachmentOut},
    summary="Upload a file into your workspace's uploads/ folder",
    description="Multipart field 'file'. 413 when the file or your uploads/ folder is over "
    "its limit (OPENPROGRAM_ATTACHMENT_MAX_BYTES, OPENPROGRAM_UPLOADS_MAX_BYTES).",
)
def attachments_create(request: HttpRequest, file: File[UploadedFile]):
    saved = attachment_save(
        user=request.user, name=file.name or "file", size=file.size, chunks=file.chunks()
    )
    return Status(201, {"path": saved.path, "name": saved.name, "size": saved.size})


@router.post("/conversations", response={201: ConversationOut}, summary="Start a conversation")
def conversations_create(request: HttpRequest, payload: ConversationIn):
    conversation = conversation_create(
        owner=request.user,
        title=payload.title,
        profile=payload.profile,
        model=payload.model,
        agent_profile=payload.agent_profile,
    )
    return Status(201, _conversation_out(conversation))


@router.get("/conversations/{conversation_id}", response=ConversationOut)
def conversations_get(request: HttpRequest, conversation_id: str):
    return _conversation_out(
        conversation_by_public_id(owner=request.user, public_id=conversation_id)
    )


@router.patch(
    "/conversations/{conversation_id}",
    response=ConversationOut,
    summary="Rename, or change the remembered profile, model, agent and toggles",
)
def conversations_patch(request: HttpRequest, conversation_id: str, payload: ConversationPatch):
    conversation = conversation_by_public_id(owner=request.user, public_id=conversation_id)
    if payload.title is not None:
        conversation_rename(conversation=conversation, title=payload.title)
    sent = payload.model_dump(exclude_unset=True)
    options = TurnOptions(**{k: v for k, v in sent.items() if k != "title"})
    clear_agent = "agent_profile" in sent and sent["agent_profile"] is None
    conversation_apply_options(conversation=conversation, options=options, clear_agent=clear_agent)
    return _conversation_out(conversation)


@router.delete("/conversations/{conversation_id}", response={204: None})
def conversations_delete(request: HttpRequest, conversation_id: str):
    conversation_delete(
        conversation=conversation_by_public_id(owner=request.user, public_id=conversation_id)
    )
    return Status(204, None)


@router.get("/conversations/{conversation_id}/runs", response=list[RunOut])
def conversations_runs(request: HttpRequest, conversation_id: str):
    conversation = conversation_by_public_id(owner=request.user, public_id=conversation_id)
    run_expire_orphans(conversation_id=conversation.pk)
    runs = run_list(owner=request.user, conversation_id=conversation.pk)
    return [_run_out(r) for r in runs.select_related("conversation")]


@router.get("/runs/{run_id}", response=RunDetailOut, summary="A run with its events and tool calls")
def runs_get(request: HttpRequest, run_id: int):
    run = run_get(owner=request.user, run_id=run_id)
    if run.status == "running" and run_expire_orphans(conversation_id=run.conversation_id):
        run.refresh_from_db()
    return {
        **_run_out(run),
        "explain": run_explain_rows(run=run),
        "not_offered": run_explain_groups(run=run),
        "events": run_events(run_id=run.pk),
        "tool_calls": [_tool_call_out(t) for t in run.tool_calls.order_by("created", "id")],
    }


async def _stop_when_revoked(
    turn: asyncio.Future, *, token_id: int, conversation_id: int, user: Any
) -> None:
    """Until ``turn`` ends, re-check its token every ``TOKEN_RECHECK_SECONDS``; stop it if revoked.

    Revoking the token (or deactivating its user) stops the turn it started, as a stop
    frame would, wherever the turn runs.
    """
    while not turn.done():
        await asyncio.wait({turn}, timeout=TOKEN_RECHECK_SECONDS)
        if turn.done():
            return
        if not await turn_store.token_in_force(token_id=token_id):
            await turn_control_send(conversation_id=conversation_id, user_id=user.pk, action="stop")
            return


@router.post(
    "/conversations/{conversation_id}/turns",
    response=TurnOut,
    summary="Run an unattended turn to completion",
    description="Approvals are denied and ask_user_question is withheld (nobody is attending). "
    "The run's events and tool calls are at GET /api/runs/{run_id}.",
)
async def conversations_turn(request: HttpRequest, conversation_id: str, payload: TurnIn):
    user = await sync_to_async(lambda: request.user)()
    conversation = await sync_to_async(conversation_by_public_id)(
        owner=user, public_id=conversation_id
    )
    options = TurnOptions(**payload.model_dump(exclude={"text", "attended"}))
    token = getattr(request, "api_token_name", None)
    with audit_channel(kind="api", detail=f"token {token!r}" if token else "session"):
        turn = asyncio.ensure_future(
            turn_run_to_completion(
                user=user, conversation_id=conversation.pk, text=payload.text, options=options
            )
        )
    token_id = getattr(request, "api_token_id", None)
    if token_id is not None:
        await _stop_when_revoked(
            turn, token_id=token_id, conversation_id=conversation.pk, user=user
        )
    outcome = await turn
    return {
        "run_id": outcome.run_id,
        "status": outcome.status,
        "text": outcome.text,
        "error": outcome.error,
    }
