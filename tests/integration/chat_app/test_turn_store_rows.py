"""The turn store's rows are the ORM's rows (core/model_sql.py).

Every write of the store goes through ``insert_values`` / ``insert_returning`` (field
values by attname, no model instances) or ``update_row``: each is round-tripped here
with every field of each model the store writes set to a value that is not its default,
and read back through the ORM. A row given only some values gets, for the others, what
``save()`` would write: callable defaults evaluated for each row, ``auto_now`` /
``auto_now_add`` at the time of the write, a ``db_default`` left to the database.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection, models
from django.db.models import Model
from django.test.utils import CaptureQueriesContext, isolate_apps
from django.utils import timezone

from audit_app.models import AuditEvent
from chat_app.models import Conversation, Message, Run, RunEvent, ToolCallRecord
from core.model_sql import (
    insert_returning,
    insert_values,
    instance_stored,
    key_read,
    update_row,
)
from tools_app.models import AgentProfile
from usage_app.models import ModelCall

pytestmark = pytest.mark.django_db

_EARLIER = timezone.now() - timedelta(days=3, seconds=7)


def _stored(model: type[Model], pk: Any) -> dict[str, Any]:
    row = model.objects.get(pk=pk)
    return {f.attname: getattr(row, f.attname) for f in model._meta.concrete_fields}


@pytest.fixture
def conversation(alice) -> Conversation:
    agent = AgentProfile.objects.create(owner=alice, name="agent", model="offline")
    return Conversation.objects.create(owner=alice, agent_profile=agent)


@pytest.fixture
def run(conversation) -> Run:
    return Run.objects.create(conversation=conversation, model="offline")


def _every_run_field(conversation: Conversation) -> dict[str, Any]:
    return {
        "conversation_id": conversation.pk,
        "status": "stopped",
        "model": "gpt-x",
        "profile_name": "mine",
        "attended": False,
        "options": {"tools_on": False, "agent_profile": 3},
        "tools": ["read", "bash"],
        "deferred": ["grep"],
        "explain": {"offered": ["read"], "rejected": {"layer3": ["x"]}},
        "warnings": ["w"],
        "usage": {"cost_usd": 0.25},
        "text": "partial ünïcode",
        "error": "it failed",
        "started": _EARLIER,
        "finished": _EARLIER + timedelta(seconds=3),
        "lease_until": _EARLIER + timedelta(seconds=30),
        "superseded": True,
    }


def test_a_run_with_every_field_and_its_key_given_is_stored_as_given(conversation):
    values = {"id": 9001, **_every_run_field(conversation)}
    with connection.cursor() as cursor:
        assert insert_returning(cursor, Run, values) == 9001  # known: nothing read back
    # A given auto_now_add value is written as given: the caller chose the time.
    assert _stored(Run, 9001) == values


def test_a_message_without_its_key_gets_the_databases_key(conversation, run):
    values = {
        "conversation_id": conversation.pk,
        "role": "assistant",
        "text": "hi ✓",
        "run_id": run.pk,
        "created": _EARLIER,
    }
    with connection.cursor() as cursor:
        assert insert_returning(cursor, Message, values) is None
        key = key_read(cursor, Message)
    assert key is not None
    assert Message.objects.latest("id").pk == key
    assert _stored(Message, key) == {"id": key, **values}
    # The instance for the row just written is the one the ORM loads, stored.
    message = instance_stored(Message, {"id": key, **values})
    assert not message._state.adding
    assert {f.attname: getattr(message, f.attname) for f in Message._meta.concrete_fields} == {
        "id": key,
        **values,
    }


def test_events_calls_ledger_and_audit_rows_with_every_field_set_are_stored_as_given(alice, run):
    rows: dict[type[Model], dict[str, Any]] = {
        RunEvent: {
            "run_id": run.pk,
            "seq": 7,
            "type": "tool_finished",
            "payload": {"x": [1, None, "é"]},
            "created": _EARLIER,
        },
        ToolCallRecord: {
            "run_id": run.pk,
            "call_id": "c1",
            "name": "bash",
            "arguments": {"command": "ls -la"},
            "status": "denied",
            "result_preview": "no",
            "is_error": True,
            "truncated": True,
            "full_result_path": "/tmp/r.txt",
            "duration_ms": 12.5,
            "parent_call_id": "outer",
            "created": _EARLIER,
        },
        ModelCall: {
            "user_id": alice.pk,
            "run_id": run.pk,
            "model": "gpt-x",
            "prompt_tokens": 11,
            "completion_tokens": 22,
            "cached_tokens": 3,
            "cost_usd": Decimal("0.12345678"),
            "price_known": False,
            "estimated": True,
            "created": _EARLIER,
        },
        AuditEvent: {
            "created": _EARLIER,
            "user_id": alice.pk,
            "username": "alice-then",
            "tool": "bash",
            "arguments": {"command": "<redacted>", "n": [1, 2.5, None]},
            "arguments_sha256": "ab" * 32,
            "verdict": "approved",
            "rule": "bash: git status",
            "decided_by": "alice-then",
            "outcome": "stopped",
            "duration_ms": 3.25,
            "channel": "api",
            "channel_detail": "token 'nightly'",
            "conversation_id": run.conversation_id,
            "run_id": run.pk,
            "call_id": "c1",
        },
    }
    for model, values in rows.items():
        given = {f.attname for f in model._meta.concrete_fields} - {"id"}
        assert set(values) == given, model  # every field but the database's key
        insert_values(model, [values])
        stored = _stored(model, model.objects.get().pk)
        assert stored == {"id": stored["id"], **values}


def _orm_row(model: type[Model], values: dict[str, Any]) -> dict[str, Any]:
    created = model.objects.create(**values)
    return _stored(model, created.pk)


@pytest.mark.parametrize(
    ("model", "values"),
    [
        (RunEvent, lambda run, alice: {"run_id": run.pk, "seq": 2, "type": "text_delta"}),
        (ToolCallRecord, lambda run, alice: {"run_id": run.pk, "call_id": "c", "name": "bash"}),
        (ModelCall, lambda run, alice: {"user_id": alice.pk, "run_id": run.pk}),
        (
            AuditEvent,
            lambda run, alice: {
                "created": _EARLIER,
                "tool": "read",
                "verdict": "allow",
                "outcome": "ok",
                "channel": "chat",
            },
        ),
        (Run, lambda run, alice: {"conversation_id": run.conversation_id, "model": "m"}),
        (Message, lambda run, alice: {"conversation_id": run.conversation_id, "role": "user"}),
        (Conversation, lambda run, alice: {"owner_id": alice.pk}),
    ],
    ids=lambda p: p.__name__ if isinstance(p, type) else None,
)
def test_fields_not_given_get_what_save_writes(alice, run, model, values):
    """The same values through ``insert_values`` and through ``objects.create``: the rows
    differ only in their keys, their times of writing and their fresh UUIDs."""
    given = values(run, alice)
    before = timezone.now()
    insert_values(model, [given])
    after = timezone.now()
    mine = _stored(model, model.objects.latest("id").pk)
    # The ORM's row in a run of its own: a run's event and call keys are unique.
    other = Run.objects.create(conversation_id=run.conversation_id, model="offline")
    theirs = _orm_row(model, values(other, alice))
    per_write = {"id", "run_id", "created", "updated", "started", "lease_until", "public_id"}
    assert {k: v for k, v in mine.items() if k not in per_write} == {
        k: v for k, v in theirs.items() if k not in per_write
    }
    for name in ("created", "updated", "started"):  # auto_now(_add): the time of the write
        if name in mine and name not in given:
            assert before <= mine[name] <= after
    if model is Run:  # a callable default (lease_deadline): a time ahead of the write
        assert mine["lease_until"] > after
    if model is Conversation:  # uuid4, called for this row
        assert mine["public_id"] != theirs["public_id"]


def test_an_insert_of_several_rows_calls_callable_defaults_for_each_row(alice):
    insert_values(Conversation, [{"owner_id": alice.pk}, {"owner_id": alice.pk, "title": "t"}])
    insert_values(Conversation, [{"owner_id": alice.pk}, {"owner_id": alice.pk}])
    stored = list(Conversation.objects.values_list("public_id", "todos"))
    assert len(stored) == 4
    assert len({public_id for public_id, _ in stored}) == 4
    assert [todos for _, todos in stored] == [[], [], [], []]


def test_a_row_given_an_unknown_name_is_refused(alice):
    with pytest.raises(TypeError, match="no field"):
        insert_values(Conversation, [{"owner": alice}])  # a relation by its attname only
    assert not Conversation.objects.exists()


@isolate_apps("chat_app")
def test_a_field_whose_pre_save_needs_the_instance_is_refused():
    class WithFile(models.Model):
        upload = models.FileField()

        class Meta:
            app_label = "chat_app"

    with pytest.raises(TypeError, match="pre_save needs a model instance"):
        insert_values(WithFile, [{"upload": "a.txt"}])


_serials = itertools.count(1)


def _next_serial() -> int:
    return next(_serials)


@pytest.fixture
def probe_model() -> Iterator[type[Model]]:
    """A model of every kind of default, with a table of its own for the test."""
    with isolate_apps("chat_app"):

        class Probe(models.Model):
            token = models.UUIDField(default=uuid.uuid4)
            serial = models.IntegerField(default=_next_serial)
            note = models.CharField(max_length=20, default="plain")
            data = models.JSONField(default=dict)
            level = models.IntegerField(db_default=7)
            day = models.DateField(auto_now_add=True)
            made = models.DateTimeField(auto_now_add=True)
            touched = models.DateTimeField(auto_now=True)

            class Meta:
                app_label = "chat_app"
                db_table = "insertfast_probe"

        with connection.schema_editor() as editor:
            editor.create_model(Probe)
        try:
            yield Probe
        finally:
            with connection.schema_editor() as editor:
                editor.delete_model(Probe)


@pytest.mark.django_db(transaction=True)  # SQLite's schema editor needs no transaction
def test_every_kind_of_default_for_rows_of_one_statement(probe_model):
    before = timezone.now()
    with CaptureQueriesContext(connection) as queries:
        insert_values(probe_model, [{"note": "given"}, {"note": "also"}])
    after = timezone.now()
    (insert,) = [q["sql"] for q in queries.captured_queries if "INSERT" in q["sql"]]
    assert "level" not in insert  # the db_default is left to the database
    first, second = probe_model.objects.order_by("id")
    assert first.token != second.token  # callable defaults: once per row
    assert second.serial == first.serial + 1
    assert (first.note, second.note) == ("given", "also")
    assert first.data == second.data == {}
    assert first.level == second.level == 7
    for row in (first, second):
        assert before <= row.made <= after and before <= row.touched <= after
        assert row.day == timezone.localdate(row.made)
    insert_values(probe_model, [{"level": 3}])
    assert probe_model.objects.latest("id").level == 3  # given: written as given


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
