"""The chat's "why not offered" carries words for people and the admin's disable reason."""

from __future__ import annotations

import pytest

from chat_app.models import Run
from chat_app.services import conversation_create
from tools_app import services as tool_services
from tools_app.catalog_sync import tool_catalog_mark_stale

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_turn_tells_alice_an_admin_turned_a_tool_off_and_why(alice, alice_client, admin_user):
    tool_catalog_mark_stale()  # another test's rolled-back rows must not look synced
    tool_services.tool_disable(name="todo_read", by=admin_user, reason="being rewritten")
    conversation = conversation_create(owner=alice)
    response = alice_client.post(
        f"/api/conversations/{conversation.public_id}/turns",
        {"text": "hello"},
        content_type="application/json",
    )
    assert response.status_code == 200
    run = Run.objects.get(pk=response.json()["run_id"])
    detail = alice_client.get(f"/api/runs/{run.pk}").json()
    group = next(g for g in detail["not_offered"] if "todo_read" in g["names"])
    assert group == {
        "layer": "L5",
        "reason": "globally disabled: being rewritten",
        "names": ["todo_read"],
        "words": "Turned off for everyone by an admin: being rewritten",
    }
    # The stored trace (what the live event carries too) has the words in each group.
    stored = next(g for g in run.explain["not_offered"] if "todo_read" in g["names"])
    assert stored["words"] == group["words"]
    page = alice_client.get(f"/c/{conversation.public_id}/").content.decode()
    assert "Turned off for everyone by an admin: being rewritten" in page
    assert "<code>L5</code>" in page  # the code stays, in a details element


def test_bob_cannot_read_why_alices_run_was_offered_what(alice, bob_client, admin_user):
    conversation = conversation_create(owner=alice)
    run = Run.objects.create(conversation=conversation, model="offline")
    assert bob_client.get(f"/api/runs/{run.pk}").status_code == 404
