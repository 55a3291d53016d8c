"""A conversation as Markdown: every current run's message and reply, with its tool calls.

Runs replaced by an edit or a regeneration are left out (the export reads as the
conversation now stands); tool calls appear as a one-line summary each, since their
results live in run history, not in the conversation.
"""

from __future__ import annotations

from chat_app.models import Conversation
from chat_app.selectors import conversation_transcript

__all__ = ["conversation_markdown"]


def _quote_fence(text: str) -> str:
    # A reply containing ``` would close our fence early: use a longer one.
    fence = "```"
    while fence in text:
        fence += "`"
    return fence


def conversation_markdown(*, conversation: Conversation) -> str:
    lines = [f"# {conversation.display_title}", ""]
    for run in conversation_transcript(conversation=conversation):
        if run.superseded:
            continue
        messages = list(run.messages.all())
        user = next((m.text for m in messages if m.role == "user"), "")
        reply = next((m.text for m in reversed(messages) if m.role == "assistant"), "")
        lines += ["## You", "", user, ""]
        calls = list(run.tool_calls.all())
        lines += ["## Assistant", ""]
        for call in calls:
            lines.append(f"- tool `{call.name}`: {call.status}")
        if calls:
            lines.append("")
        if reply:
            lines += [reply, ""]
        if run.error:
            fence = _quote_fence(run.error)
            lines += [f"{fence}text", run.error, fence, ""]
    return "\n".join(lines).rstrip() + "\n"
