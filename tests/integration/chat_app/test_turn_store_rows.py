"""The turn store's rows are the ORM's rows (core/model_sql.py).

Every write of the store goes through ``insert_rows`` / ``insert_returning`` (model
instances) or ``update_row`` (field values): each is round-tripped here with every field
of each model the store writes set to a value that is not its default, and read back
through the ORM.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from django.db.models import Model
from django.utils import timezone

from audit_app.models import AuditEvent
from chat_app.models import Conversation, Message, Run, RunEvent, ToolCallRecord
from core.model_sql import insert_returning, insert_rows, key_read, update_row
from tools_app.models import AgentProfile
from usage_app.models import ModelCall

pytestmark = pytest.mark.django_db

_EARLIER = timezone.now() - timedelta(days=3, seconds=7)


def _fields(instance: Model) -> dict[str, Any]:
    return {f.attname: getattr(instance, f.attname) for f in instance._meta.concrete_fields}


def _assert_stored_as_built(instance: Model) -> None:
    """The row the ORM loads has every field as the instance holds it (``auto_now`` /
    ``auto_now_add`` as ``pre_save`` set them on the instance, as ``save()`` does)."""
    stored = type(instance).objects.get(pk=instance.pk)
    assert _fields(stored) == _fields(instance)


@pytest.fixture
def conversation(alice) -> Conversation:
    agent = AgentProfile.objects.create(owner=alice, name="agent", model="offline")
    return Conversation.objects.create(owner=alice, agent_profile=agent)


@pytest.fixture
def run(conversation) -> Run:
    return Run.objects.create(conversation=conversation, model="offline")


def test_a_run_with_every_field_set_is_stored_as_built(conversation):
    run = Run(
        pk=9001,
        conversation=conversation,
        status="stopped",
        model="gpt-x",
        profile_name="mine",
        attended=False,
        options={"tools_on": False, "agent_profile": 3},
        tools=["read", "bash"],
        deferred=["grep"],
        explain={"offered": ["read"], "rejected": {"layer3": ["x"]}},
        warnings=["w"],
        usage={"cost_usd": 0.25},
        text="partial ünïcode",
        error="it failed",
        started=_EARLIER,
        finished=_EARLIER + timedelta(seconds=3),
        lease_until=_EARLIER + timedelta(seconds=30),
        superseded=True,
    )
    with connection.cursor() as cursor:
        insert_returning(cursor, run)
        key_read(cursor, run)
    assert run.started > _EARLIER  # auto_now_add, as save() sets it
    _assert_stored_as_built(run)


def test_a_message_without_its_key_gets_the_databases_key(conversation, run):
    message = Message(conversation=conversation, role="assistant", text="hi ✓", run=run)
    with connection.cursor() as cursor:
        insert_returning(cursor, message)
        key_read(cursor, message)
    assert message.pk is not None
    _assert_stored_as_built(message)


def test_events_calls_and_ledger_rows_with_every_field_set_are_stored_as_built(alice, run):
    event = RunEvent(run=run, seq=7, type="tool_finished", payload={"x": [1, None, "é"]})
    call = ToolCallRecord(
        run=run,
        call_id="c1",
        name="bash",
        arguments={"command": "ls -la"},
        status="denied",
        result_preview="no",
        is_error=True,
        truncated=True,
        full_result_path="/tmp/r.txt",
        duration_ms=12.5,
        parent_call_id="outer",
    )
    ledger = ModelCall(
        user=alice,
        run=run,
        model="gpt-x",
        prompt_tokens=11,
        completion_tokens=22,
        cached_tokens=3,
        cost_usd=Decimal("0.12345678"),
        price_known=False,
        estimated=True,
    )
    audit = AuditEvent(
        created=_EARLIER,
        user=alice,
        username="alice-then",
        tool="bash",
        arguments={"command": "<redacted>", "n": [1, 2.5, None]},
        arguments_sha256="ab" * 32,
        verdict="approved",
        rule="bash: git status",
        decided_by="alice-then",
        outcome="stopped",
        duration_ms=3.25,
        channel="api",
        channel_detail="token 'nightly'",
        conversation_id=run.conversation_id,
        run_id=run.pk,
        call_id="c1",
    )
    for instance in (event, call, ledger, audit):
        insert_rows([instance])
        instance.pk = type(instance).objects.get().pk  # the database's key
        _assert_stored_as_built(instance)


def test_callable_defaults_are_evaluated_for_each_row(alice):
    rows = [Conversation(owner=alice), Conversation(owner=alice)]
    insert_rows(rows)
    stored = list(Conversation.objects.values_list("public_id", flat=True))
    assert len(set(stored)) == 2
    assert set(stored) == {row.public_id for row in rows}


def test_an_update_of_every_field_is_stored_as_given(alice, bob, conversation, run):
    other = Conversation.objects.create(owner=bob)
    values = {
        "conversation": other.pk,
        "status": "completed",
        "model": "gpt-y",
        "profile_name": "p2",
        "attended": False,
        "options": {"plan_mode": True},
        "tools": ["a"],
        "deferred": ["b"],
        "explain": {"c": 1},
        "warnings": ["d"],
        "usage": {"e": 2},
        "text": "t",
        "error": "e",
        "started": _EARLIER,
        "finished": _EARLIER + timedelta(minutes=1),
        "lease_until": None,
        "superseded": True,
    }
    update_row(Run, pk=run.pk, values=values)
    stored = Run.objects.get(pk=run.pk)
    assert {name: getattr(stored, name) for name in values if name != "conversation"} == {
        name: value for name, value in values.items() if name != "conversation"
    }
    assert stored.conversation_id == other.pk
    chosen = {
        "title": "renamed",
        "profile_name": "p3",
        "model": "m",
        "agent_profile": None,
        "tools_on": False,
        "web_search_on": False,
        "plan_mode": True,
        "attended": False,
        "todos": [{"content": "x"}],
        "allowed_tools": ["read"],
        "updated": _EARLIER,
    }
    update_row(Conversation, pk=conversation.pk, values=chosen)
    after = Conversation.objects.get(pk=conversation.pk)
    assert {name: getattr(after, name) for name in chosen} == chosen
