"""A turn's start (chat_app/turn_inputs.py): what it reads and writes, in how few statements."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from chat_app.models import Conversation, Message, Run
from chat_app.schemas import TurnOptions
from chat_app.services import conversation_create
from chat_app.turn_inputs import turn_prepare
from openprogram_site.api_errors import NotFoundError
from tools_app.models import AgentProfile, Tool, ToolProfile

pytestmark = pytest.mark.django_db

TURN_START_STATEMENTS = 10
"""Conversation lock, profiles + global disables (one), running runs, the turn limits
(one: owner lock, running count and the last minute's starts), INSERT run, INSERT
message, one conversation UPDATE (title, updated and the composer's choices), history,
the budget, INSERT the turn's first event (its user_message, seq 1: the turn then writes
no history job of its own before its first model request). Was 11 with the limits' three
statements, and the first event cost a history job of its own."""


def _prepare(user, conversation_id, **options):
    return turn_prepare(
        user=user,
        conversation_id=conversation_id,
        text="hello there",
        options=TurnOptions(**options),
        attended=None,
        may_abandon_orphans=True,
    )


def test_a_turn_start_as_the_socket_sends_it_costs_ten_statements(alice):
    conversation = conversation_create(owner=alice, model="offline")
    with CaptureQueriesContext(connection) as queries:
        _prepare(alice, conversation.pk, model="offline")
    assert len(queries.captured_queries) == TURN_START_STATEMENTS


def test_a_named_profile_and_changed_toggles_cost_nothing_extra(alice):
    ToolProfile.objects.create(owner=alice, name="mine", tools=["echo"])
    conversation = conversation_create(owner=alice)
    with CaptureQueriesContext(connection) as queries:
        prepared = _prepare(alice, conversation.pk, profile="mine", plan_mode=True, tools_on=False)
    # Checking the chosen profile reads it once more (validation), nothing else is added.
    assert len(queries.captured_queries) == TURN_START_STATEMENTS + 1
    stored = Conversation.objects.get(pk=conversation.pk)
    assert (stored.profile_name, stored.plan_mode, stored.tools_on, stored.title) == (
        "mine",
        True,
        False,
        "Hello there",
    )
    assert prepared.request_kwargs["profile_tools"] == ["echo"]
    assert prepared.request_kwargs["named_profiles"] == {"mine": ["echo"]}
    assert prepared.request_kwargs["plan_mode"] is True


def test_the_agent_profiles_model_is_the_runs_model(alice):
    agent = AgentProfile.objects.create(owner=alice, name="researcher", model="offline")
    conversation = conversation_create(owner=alice, agent_profile=agent.pk)
    prepared = _prepare(alice, conversation.pk)
    assert Run.objects.get(pk=prepared.run_id).model == "offline"
    assert prepared.request_kwargs["model"] == "offline"


def test_a_global_disable_applies_to_the_next_turn(alice):
    Tool.objects.update_or_create(name="echo", defaults={"disabled": False})
    first = Conversation.objects.create(owner=alice, profile_name="default", model="offline")
    assert "echo" not in _prepare(alice, first.pk).request_kwargs["disabled"]
    Tool.objects.filter(name="echo").update(disabled=True, disabled_reason="maintenance")
    second = Conversation.objects.create(owner=alice, profile_name="default", model="offline")
    assert _prepare(alice, second.pk).request_kwargs["disabled"]["echo"] == "maintenance"


def test_a_profile_edit_applies_to_the_next_turn(alice):
    profile = ToolProfile.objects.create(owner=alice, name="mine", tools=["echo"])
    first = conversation_create(owner=alice, profile="mine")
    assert _prepare(alice, first.pk).request_kwargs["profile_tools"] == ["echo"]
    profile.tools = ["echo", "search"]
    profile.save()
    second = conversation_create(owner=alice, profile="mine")
    assert _prepare(alice, second.pk).request_kwargs["profile_tools"] == ["echo", "search"]


def test_bob_cannot_start_a_turn_in_alices_conversation(alice, bob):
    conversation = conversation_create(owner=alice)
    # In a transaction of its own, as a batch's job runs: the refusal rolls back only it.
    with pytest.raises(NotFoundError), transaction.atomic():
        _prepare(bob, conversation.pk)
    assert not Run.objects.filter(conversation=conversation).exists()


def test_bobs_profiles_never_reach_alices_turn(alice, bob):
    ToolProfile.objects.create(owner=bob, name="shared-name", tools=["bobs_tool"])
    ToolProfile.objects.create(owner=bob, name="bobs-only", tools=["bobs_tool"])
    ToolProfile.objects.create(owner=alice, name="shared-name", tools=["echo"])
    conversation = conversation_create(owner=alice, profile="shared-name")
    kwargs = _prepare(alice, conversation.pk).request_kwargs
    assert kwargs["profile_tools"] == ["echo"]
    assert kwargs["named_profiles"] == {"shared-name": ["echo"]}


def test_bob_cannot_pick_a_profile_only_he_has(alice, bob):
    from openprogram_site.api_errors import UnprocessableError

    ToolProfile.objects.create(owner=bob, name="bobs-only", tools=["bobs_tool"])
    conversation = conversation_create(owner=alice)
    with pytest.raises(UnprocessableError, match="does not exist"):
        _prepare(alice, conversation.pk, profile="bobs-only")


def test_a_spent_budget_is_the_starts_verdict(alice):
    from usage_app.models import ModelCall

    assert _prepare(alice, conversation_create(owner=alice).pk).budget_refusal is None
    _budget_spent(alice)
    assert ModelCall.objects.filter(user=alice).exists()
    refusal = _prepare(alice, conversation_create(owner=alice).pk).budget_refusal
    assert refusal is not None and "budget is spent" in refusal


def _budget_spent(user) -> None:
    from decimal import Decimal

    from usage_app.models import ModelCall, UserBudget

    UserBudget.objects.create(user=user, monthly_usd=Decimal("1"))
    ModelCall.objects.create(user=user, model="offline", cost_usd=Decimal("2"))


def test_a_turn_start_sends_what_it_reads_nothing_of_together(alice):
    """On PostgreSQL the message INSERT and the conversation UPDATE share one pipeline
    (the message's key read after it), and so do the history and budget reads with the
    first event's INSERT: 10 statements in 7 round trips. SQLite runs the same
    statements one by one."""
    from chat_app.models import RunEvent
    from usage_app.models import ModelCall

    conversation = conversation_create(owner=alice, model="offline")
    sent: list[tuple[str, bool]] = []
    pipelines: list[object] = []  # each pipeline block (psycopg's Pipeline) is one round trip

    def record(execute, sql, params, many, context):
        on_pg = connection.vendor == "postgresql"
        in_block = bool(on_pg and connection.connection.pgconn.pipeline_status)
        sent.append((sql, in_block))
        if in_block and not any(p is connection.connection._pipeline for p in pipelines):
            pipelines.append(connection.connection._pipeline)
        return execute(sql, params, many, context)

    def in_pipeline(start: str, table: str) -> bool:
        (flag,) = [f for sql, f in sent if sql.startswith(start) and table in sql.split("(")[0]]
        return flag

    def select_in_pipeline(table: str) -> bool:
        (flag,) = [f for sql, f in sent if sql.startswith("SELECT") and f"FROM {table}" in sql]
        return flag

    with connection.execute_wrapper(record):
        prepared = _prepare(alice, conversation.pk)
    message = Message.objects.get(pk=prepared.message_id)
    assert (message.role, message.text, message.run_id) == ("user", "hello there", prepared.run_id)
    assert Conversation.objects.get(pk=conversation.pk).title == "Hello there"
    pipelined = connection.vendor == "postgresql"
    q = connection.ops.quote_name
    assert in_pipeline("INSERT", q(Message._meta.db_table)) is pipelined
    assert in_pipeline("UPDATE", q(Conversation._meta.db_table)) is pipelined
    assert select_in_pipeline(q(Message._meta.db_table)) is pipelined  # the history
    assert any(q(ModelCall._meta.db_table) in sql and f for sql, f in sent) is pipelined
    assert in_pipeline("INSERT", q(RunEvent._meta.db_table)) is pipelined  # the first event
    # The run's key goes into the message row: its INSERT is answered first.
    assert in_pipeline("INSERT", q(Run._meta.db_table)) is False
    # A statement on its own is a round trip, so is each pipeline block.
    round_trips = len([f for _, f in sent if not f]) + len(pipelines)
    assert len(sent) == TURN_START_STATEMENTS
    assert round_trips == (TURN_START_STATEMENTS - 3 if pipelined else TURN_START_STATEMENTS)


def test_a_turn_starts_first_event_is_in_history_with_its_run(alice):
    from chat_app.models import RunEvent

    conversation = conversation_create(owner=alice, model="offline")
    prepared = _prepare(alice, conversation.pk)
    (event,) = RunEvent.objects.filter(run_id=prepared.run_id)
    assert (event.seq, event.type) == (1, "user_message")
    assert event.payload == {
        "text": "hello there",
        "message_id": prepared.message_id,
        "title": "Hello there",
        "replaces": None,
    }
    assert prepared.first_event == {"type": "user_message", **event.payload}


def test_a_turn_starts_history_is_the_earlier_turns_without_its_own_message(alice):
    from chat_app.services import run_finish

    conversation = conversation_create(owner=alice, model="offline")
    first = _prepare(alice, conversation.pk)
    assert first.request_kwargs["history"] == []
    run_finish(run_id=first.run_id, status="completed", text="hi, alice")
    second = turn_prepare(
        user=alice,
        conversation_id=conversation.pk,
        text="and again",
        options=TurnOptions(),
        attended=None,
        may_abandon_orphans=True,
    )
    history = [(m.role, m.content) for m in second.request_kwargs["history"]]
    assert history == [("user", "hello there"), ("assistant", "hi, alice")]
