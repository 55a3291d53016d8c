"""The "allow this tool for the rest of this conversation" grant, and which tools it may cover.

The grant is honoured in one place, the running turn's approval hook
(``chat_app.turn_control.TurnControl.approval_hook``), which every approval of a chat turn goes
through (``openprogram.programs._approval`` → the dispatcher's wrapper → that hook). It
only shortens the human's part: the request is still announced and recorded as an
approval event ("allowed for this conversation"), and a tool that always asks is never
covered, whatever the stored list says:

* a name in ``settings.CHAT_ALWAYS_ASK_TOOLS``;
* an MCP tool (its server's metadata is untrusted, and its behaviour can change under
  the same name);
* a tool whose ``requires_approval`` is a rule on the arguments (approving one call says
  nothing about the next arguments);
* a name the registry does not know (nothing to judge it by).
"""

from __future__ import annotations

from django.conf import settings
from django.db import transaction

from chat_app.models import Conversation
from openprogram.programs import registry

__all__ = [
    "ALLOWED_REASON",
    "conversation_allow_tool",
    "conversation_allowed_tools",
    "tool_always_asks",
]

ALLOWED_REASON = "allowed for this conversation"


def tool_always_asks(name: str) -> bool:
    """True when no grant may cover ``name``: every call of it asks the person."""
    if name in settings.CHAT_ALWAYS_ASK_TOOLS:
        return True
    tool = registry.get(name)
    if tool is None or tool.source == "mcp":
        return True
    return callable(tool.requires_approval)


def conversation_allowed_tools(*, conversation: Conversation) -> frozenset[str]:
    """The conversation's grants that still hold (always-ask names are dropped).

    Read from the loaded ``conversation``: the turn's start loads it in the same
    transaction, so a second query would only repeat it.
    """
    stored = conversation.allowed_tools or []
    return frozenset(n for n in stored if isinstance(n, str) and not tool_always_asks(n))


def conversation_allow_tool(*, conversation_id: int, owner_id: int, name: str) -> bool:
    """Remember ``name`` for the conversation; False (nothing stored) for an always-ask tool."""
    if tool_always_asks(name):
        return False
    with transaction.atomic():
        conversation = (
            Conversation.objects.select_for_update()
            .filter(pk=conversation_id, owner_id=owner_id)
            .first()
        )
        if conversation is None:
            return False
        if name not in conversation.allowed_tools:
            conversation.allowed_tools = [*conversation.allowed_tools, name]
            conversation.save(update_fields=["allowed_tools"])
    return True
