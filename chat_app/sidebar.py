"""The sidebar's conversation list: grouped by date (Today, Yesterday…) and searchable.

Search matches a conversation's title or any of its messages (case-insensitive); only
the owner's conversations are ever looked at.
"""

from __future__ import annotations

import dataclasses
from datetime import date

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from chat_app.models import Conversation, Message

__all__ = ["SIDEBAR_LIMIT", "ConversationGroup", "conversation_groups", "conversation_search"]

SIDEBAR_LIMIT = 200
SEARCH_LIMIT = 50


@dataclasses.dataclass(frozen=True)
class ConversationGroup:
    label: str
    conversations: list[Conversation]


def _label(day: date, today: date) -> str:
    age = (today - day).days
    if age <= 0:
        return "Today"
    if age == 1:
        return "Yesterday"
    if age < 7:
        return "Previous 7 days"
    if age < 30:
        return "Previous 30 days"
    return "Older"


def conversation_groups(
    *, owner: AbstractBaseUser, today: date | None = None
) -> list[ConversationGroup]:
    """The owner's latest conversations, newest first, in date groups (local time)."""
    today = today or timezone.localdate()
    groups: list[ConversationGroup] = []
    rows = Conversation.objects.filter(owner=owner).order_by("-updated", "-id")[:SIDEBAR_LIMIT]
    for conversation in rows:
        label = _label(timezone.localtime(conversation.updated).date(), today)
        if not groups or groups[-1].label != label:
            groups.append(ConversationGroup(label=label, conversations=[]))
        groups[-1].conversations.append(conversation)
    return groups


def conversation_search(*, owner: AbstractBaseUser, query: str) -> QuerySet[Conversation]:
    """The owner's conversations whose title or messages contain ``query``, newest first."""
    query = " ".join(query.split())[:200]
    conversations = Conversation.objects.filter(owner=owner)
    if not query:
        return conversations.order_by("-updated", "-id")[:SEARCH_LIMIT]
    in_messages = Message.objects.filter(conversation=OuterRef("pk"), text__icontains=query)
    return conversations.filter(Q(title__icontains=query) | Exists(in_messages)).order_by(
        "-updated", "-id"
    )[:SEARCH_LIMIT]
