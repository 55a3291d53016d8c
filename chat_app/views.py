"""The chat page (sidebar, transcript, composer) and the owner-only full-result download."""

from __future__ import annotations

import json
from uuid import UUID

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import (
    FileResponse,
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponsePermanentRedirect,
)
from django.shortcuts import render
from django.templatetags.static import static
from django.views.decorators.http import require_GET

from chat_app.export import conversation_export_name, conversation_json, conversation_markdown
from chat_app.markdown import render_markdown, render_user_markdown
from chat_app.message_files import split_attached
from chat_app.models import Conversation, Run
from chat_app.selectors import (
    conversation_by_public_id,
    conversation_transcript,
    model_choices,
    run_explain_groups,
    run_get,
    tool_result_path,
)
from chat_app.services import run_expire_orphans
from chat_app.sidebar import conversation_groups
from core.api_errors import NotFoundError

__all__ = [
    "chat_home",
    "conversation_export",
    "conversation_page",
    "favicon",
    "tool_result_download",
    "user_message_fragment",
]


def _composer_context(request: HttpRequest) -> dict:
    from openprogram.programs.builtin.web_search import NO_BACKEND_REASON, search_backend
    from tools_app.mcp.models import MCPServer
    from tools_app.selectors import agent_profile_list, profile_names

    return {
        # Controls that could do nothing are not offered: no server, no Resources; no
        # search backend, web search is off and says why.
        "mcp_servers": MCPServer.objects.filter(enabled=True).exists(),
        "web_search_reason": "" if search_backend() else NO_BACKEND_REASON,
        "profiles": profile_names(owner=request.user),
        "agent_profiles": agent_profile_list(owner=request.user),
        "models": model_choices(),
        "groups": conversation_groups(owner=request.user),
        "attachment_max_bytes": settings.CHAT_ATTACHMENT_MAX_BYTES,
    }


_STOPPED_TAIL = "\nOutput so far:\n"
"""How the framework's call policy appends what a cut-off call printed (call_policy._partial)."""


def _stopped_tail(preview: str) -> str:
    # As chat-transcript.js does for a live card: everything after the first marker.
    return preview.split(_STOPPED_TAIL, 1)[1] if _STOPPED_TAIL in preview else ""


def _with_user_message(run: Run) -> Run:
    """The run with its person's message as _user_message.html shows it: the text as
    Markdown (the same safe renderer as replies) and the attached files as chips."""
    user_text = next((m.text for m in run.messages.all() if m.role == "user"), "")
    run.user_text, run.user_files = split_attached(user_text)
    run.user_html = render_user_markdown(run.user_text)
    return run


@require_GET
def user_message_fragment(request: HttpRequest, run_id: int) -> HttpResponse:
    """A run's message as the page renders it (Markdown, file chips, the time it was
    sent), for the owner only: the live page swaps it in for the plain text a turn's
    ``user_message`` event carries, so live and reloaded messages are the same."""
    try:
        run = run_get(owner=request.user, run_id=run_id)
    except NotFoundError as exc:
        raise Http404(exc.message) from exc
    return render(request, "chat_app/_user_message.html", {"run": _with_user_message(run)})


@require_GET
def chat_home(request: HttpRequest) -> HttpResponse:
    """A new chat: the composer, focused; the conversation is created by the first message."""
    from accounts.preferences import preferred_model
    from tools_app.selectors import active_profile_name

    # What conversation_create would pick, shown before anything is created.
    draft = Conversation(
        owner=request.user,
        profile_name=active_profile_name(owner=request.user),
        model=preferred_model(user=request.user),
    )
    return render(
        request,
        "chat_app/chat.html",
        {"conversation": None, "draft": draft, **_composer_context(request)},
    )


@require_GET
def conversation_page(request: HttpRequest, public_id: UUID) -> HttpResponse:
    try:
        conversation = conversation_by_public_id(owner=request.user, public_id=public_id)
    except NotFoundError as exc:
        raise Http404(exc.message) from exc
    # A turn whose server died must not show as running forever (its lease ran out).
    run_expire_orphans(conversation_id=conversation.pk)
    runs = conversation_transcript(conversation=conversation)
    for run in runs:
        replies = [m for m in run.messages.all() if m.role == "assistant"]
        run.reply_html = render_markdown(replies[-1].text) if replies else ""
        run.not_offered = run_explain_groups(run=run)
        _with_user_message(run)
        for call in run.tool_calls.all():
            call.arguments_json = json.dumps(call.arguments, indent=2, ensure_ascii=False)
            call.stopped_tail = (
                _stopped_tail(call.result_preview) if call.status == "stopped" else ""
            )
    return render(
        request,
        "chat_app/chat.html",
        {"conversation": conversation, "runs": runs, **_composer_context(request)},
    )


_EXPORTS = {
    "md": (conversation_markdown, "text/markdown; charset=utf-8"),
    "json": (conversation_json, "application/json"),
}


@require_GET
def conversation_export(request: HttpRequest, public_id: UUID, extension: str) -> HttpResponse:
    """The conversation as a Markdown or JSON file named after its title, for its owner only."""
    try:
        conversation = conversation_by_public_id(owner=request.user, public_id=public_id)
    except NotFoundError as exc:
        raise Http404(exc.message) from exc
    render_export, content_type = _EXPORTS[extension]
    response = HttpResponse(render_export(conversation=conversation), content_type=content_type)
    name = conversation_export_name(conversation=conversation, extension=extension)
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@require_GET
def tool_result_download(request: HttpRequest, run_id: int, call_id: str) -> FileResponse:
    try:
        path = tool_result_path(owner=request.user, run_id=run_id, call_id=call_id)
    except NotFoundError as exc:
        raise Http404(exc.message) from exc
    return FileResponse(
        path.open("rb"), as_attachment=True, filename=path.name, content_type="text/plain"
    )


@login_not_required
@require_GET
def favicon(request: HttpRequest) -> HttpResponsePermanentRedirect:
    """Browsers ask for /favicon.ico on every page, logged in or not."""
    return HttpResponsePermanentRedirect(static("favicon.svg"))
