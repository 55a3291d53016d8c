"""A conversation as a file: Markdown to read, JSON to process, named after its title.

Every current run's message and reply, with its tool calls: name, status, arguments and
the result as run history keeps it (the preview the model saw, with a note when it was
truncated). Runs replaced by an edit or a regeneration are left out (the export reads as
the conversation now stands).
"""

from __future__ import annotations

import json
import re
from typing import Any

from chat_app.models import Conversation, Run
from chat_app.selectors import conversation_transcript

__all__ = ["conversation_export_name", "conversation_json", "conversation_markdown"]

_UNSAFE = re.compile(r"[^\w.-]+")


def conversation_export_name(*, conversation: Conversation, extension: str) -> str:
    """A file name from the title ("Trip plans" -> "Trip-plans.md"), ASCII-safe for the
    Content-Disposition header; "chat" when nothing of the title is left."""
    stem = _UNSAFE.sub("-", conversation.display_title.encode("ascii", "ignore").decode())
    return f"{stem.strip('-.')[:80] or 'chat'}.{extension}"


def _quote_fence(text: str) -> str:
    # A text containing ``` would close our fence early: use a longer one.
    fence = "```"
    while fence in text:
        fence += "`"
    return fence


def _fenced(text: str, language: str = "text") -> list[str]:
    fence = _quote_fence(text)
    return [f"{fence}{language}", text, fence]


def _runs(conversation: Conversation) -> list[dict[str, Any]]:
    rows = []
    for run in conversation_transcript(conversation=conversation):
        if run.superseded:
            continue
        rows.append(_run_row(run))
    return rows


def _run_row(run: Run) -> dict[str, Any]:
    messages = list(run.messages.all())
    return {
        "started": run.started.isoformat(),
        "status": run.status,
        "model": run.model,
        "user": next((m.text for m in messages if m.role == "user"), ""),
        "reply": next((m.text for m in reversed(messages) if m.role == "assistant"), ""),
        "error": run.error,
        "tool_calls": [
            {
                "name": call.name,
                "status": call.status,
                "arguments": call.arguments,
                "result": call.result_preview,
                "is_error": call.is_error,
                "truncated": call.truncated,
                "duration_ms": round(call.duration_ms),
                "parent_call_id": call.parent_call_id or None,
                "call_id": call.call_id,
            }
            for call in run.tool_calls.all()
        ],
    }


def conversation_json(*, conversation: Conversation) -> str:
    return json.dumps(
        {"title": conversation.display_title, "runs": _runs(conversation)},
        indent=2,
        ensure_ascii=False,
    )


def conversation_markdown(*, conversation: Conversation) -> str:
    lines = [f"# {conversation.display_title}", ""]
    for run in _runs(conversation):
        lines += ["## You", "", run["user"], "", "## Assistant", ""]
        for call in run["tool_calls"]:
            lines += [f"### Tool `{call['name']}`: {call['status']}", "", "Arguments:", ""]
            lines += [*_fenced(json.dumps(call["arguments"], indent=2, ensure_ascii=False), "json")]
            label = "Error" if call["is_error"] else "Result"
            note = " (truncated for the model)" if call["truncated"] else ""
            lines += ["", f"{label}{note}:", "", *_fenced(call["result"]), ""]
        if run["reply"]:
            lines += [run["reply"], ""]
        if run["error"]:
            lines += [*_fenced(run["error"]), ""]
    return "\n".join(lines).rstrip() + "\n"
