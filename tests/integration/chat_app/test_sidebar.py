"""The sidebar's date groups and the conversation search (GET /api/conversations?q=)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from chat_app.models import Conversation, Message
from chat_app.sidebar import conversation_groups

pytestmark = pytest.mark.django_db


def _conversation(owner, title: str, *, days_ago: int = 0, said: str = "") -> Conversation:
    c = Conversation.objects.create(owner=owner, title=title)
    if said:
        Message.objects.create(conversation=c, role="user", text=said)
    Conversation.objects.filter(pk=c.pk).update(updated=timezone.now() - timedelta(days=days_ago))
    return c


def test_conversations_are_grouped_by_how_long_ago_they_were_used(alice):
    for title, days in [("a", 0), ("b", 1), ("c", 3), ("d", 20), ("e", 90)]:
        _conversation(alice, title, days_ago=days)
    groups = conversation_groups(owner=alice)
    assert [(g.label, [c.title for c in g.conversations]) for g in groups] == [
        ("Today", ["a"]),
        ("Yesterday", ["b"]),
        ("Previous 7 days", ["c"]),
        ("Previous 30 days", ["d"]),
        ("Older", ["e"]),
    ]


def test_search_matches_titles_and_messages_case_insensitively(alice_client, alice):
    _conversation(alice, "Packing list", said="tent and stove")
    _conversation(alice, "Budget", said="the STOVE costs 40")
    _conversation(alice, "Unrelated", said="nothing here")
    found = alice_client.get("/api/conversations?q=stove").json()
    assert sorted(c["title"] for c in found) == ["Budget", "Packing list"]
    assert [c["title"] for c in alice_client.get("/api/conversations?q=packing").json()] == [
        "Packing list"
    ]


def test_bob_never_finds_alices_conversations(alice, bob):
    _conversation(alice, "Alice's secret plan", said="the secret")
    client = Client()
    client.force_login(bob)
    assert client.get("/api/conversations?q=secret").json() == []


def test_like_wildcards_in_a_search_match_only_themselves(alice_client, alice):
    _conversation(alice, "Discount", said="50% off")
    _conversation(alice, "Other", said="nothing here")
    assert [c["title"] for c in alice_client.get("/api/conversations?q=%25").json()] == ["Discount"]
    assert alice_client.get("/api/conversations?q=_").json() == []
