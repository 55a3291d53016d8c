"""A turn's start (chat_app/turn_store/_start.py): what it reads and writes, in how few
statements and round trips."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from chat_app.models import Conversation, Message, Run
from chat_app.schemas import TurnOptions
from chat_app.services import conversation_create
from chat_app.turn_store import run_finish
from chat_app.turn_store._batch import _run_jobs
from chat_app.turn_store._start import start_job
from core.api_errors import NotFoundError
from tools_app.models import AgentProfile, Tool, ToolProfile

pytestmark = pytest.mark.django_db

BASE_STATEMENTS = 11
"""Conversation lock, profiles + global disables (one), the team policy (one: rules,
marks and the switch, ``tools_app.policy.selectors.policy_for_user_statement``), running
runs, the turn limits (one: owner lock, running count and the last minute's starts),
INSERT run, INSERT message, one conversation UPDATE (title, updated and the composer's
choices), history, the budget (one: the user's, the default's and the groups'), INSERT
the turn's first event (its user_message, seq 1: the turn then writes no history job of
its own before its first model request)."""


def _start_statements() -> int:
    """PostgreSQL adds one: the run's and the message's keys, taken from their sequences
    beforehand, so nothing of the start waits for an INSERT's answer."""
    return BASE_STATEMENTS + (connection.vendor == "postgresql")


def _statements(queries: CaptureQueriesContext) -> int:
    """Statements captured, the savepoints of the test's own transaction left out."""
    savepoints = ("SAVEPOINT", "RELEASE SAVEPOINT")
    return len([q for q in queries.captured_queries if not q["sql"].startswith(savepoints)])


def start_in_a_batch_of_one(**kwargs):
    """A start on its own, as a batch of one runs it (in the test's thread)."""
    ((ok, result),) = _run_jobs([(start_job, kwargs)])
    if not ok:
        raise result
    return result


def _prepare(user, conversation_id, **options):
    return start_in_a_batch_of_one(
        user=user,
        conversation_id=conversation_id,
        text="hello there",
        options=TurnOptions(**options),
        attended=None,
        may_abandon_orphans=True,
    )


def test_a_turn_start_as_the_socket_sends_it_costs_eleven_statements(alice):
    conversation = conversation_create(owner=alice, model="offline")
    with CaptureQueriesContext(connection) as queries:
        _prepare(alice, conversation.pk, model="offline")
    assert _statements(queries) == _start_statements()


def test_a_named_profile_and_changed_toggles_cost_nothing_extra(alice):
    ToolProfile.objects.create(owner=alice, name="mine", tools=["echo"])
    conversation = conversation_create(owner=alice)
    with CaptureQueriesContext(connection) as queries:
        prepared = _prepare(alice, conversation.pk, profile="mine", plan_mode=True, tools_on=False)
    # Checking the chosen profile reads it once more (validation), nothing else is added.
    assert _statements(queries) == _start_statements() + 1
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
    from core.api_errors import UnprocessableError

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


class _RoundTrips:
    """Statements sent, and how many round trips they took: on PostgreSQL a statement
    outside a pipeline is one, and so is each pipeline block (psycopg's Pipeline); other
    databases run every statement on its own. Savepoints (the test's own transaction
    around a batch's) are left out."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, bool]] = []
        self._pipelines: list[object] = []

    def __call__(self, execute, sql, params, many, context):
        if not sql.startswith(("SAVEPOINT", "RELEASE SAVEPOINT")):
            on_pg = connection.vendor == "postgresql"
            in_block = bool(on_pg and connection.connection.pgconn.pipeline_status)
            self.sent.append((sql, in_block))
            pipeline = connection.connection._pipeline if in_block else None
            if in_block and not any(p is pipeline for p in self._pipelines):
                self._pipelines.append(pipeline)
        return execute(sql, params, many, context)

    @property
    def count(self) -> int:
        return len([f for _, f in self.sent if not f]) + len(self._pipelines)


def test_a_turn_start_sends_its_statements_in_two_round_trips_on_postgresql(alice):
    """On PostgreSQL the start sends what it reads under the conversation's lock (the
    lock, the running runs, the profiles, the run's and message's keys) in one pipeline,
    and everything else (the run and message INSERTs, the limits, the conversation
    UPDATE, the history and budget reads, the first event) in a second: two round trips
    where it took seven. SQLite runs the same statements one by one."""
    from chat_app.models import RunEvent
    from usage_app.models import ModelCall

    conversation = conversation_create(owner=alice, model="offline")
    trips = _RoundTrips()
    with connection.execute_wrapper(trips):
        prepared = _prepare(alice, conversation.pk)
    message = Message.objects.get(pk=prepared.message_id)
    assert (message.role, message.text, message.run_id) == ("user", "hello there", prepared.run_id)
    assert Conversation.objects.get(pk=conversation.pk).title == "Hello there"
    pipelined = connection.vendor == "postgresql"
    q = connection.ops.quote_name
    for table in (Run, Message, RunEvent):
        (flag,) = [
            f for sql, f in trips.sent if sql.startswith(f"INSERT INTO {q(table._meta.db_table)}")
        ]
        assert flag is pipelined
    assert any(q(ModelCall._meta.db_table) in sql and f for sql, f in trips.sent) is pipelined
    assert len(trips.sent) == _start_statements()
    assert trips.count == (2 if pipelined else BASE_STATEMENTS)


def _start_jobs(*starts):
    return [
        (
            start_job,
            {
                "user": user,
                "conversation_id": conversation.pk,
                "text": text,
                "options": TurnOptions(),
                "attended": None,
                "may_abandon_orphans": True,
            },
        )
        for user, conversation, text in starts
    ]


def test_a_batch_of_starts_costs_postgresql_two_round_trips_whatever_its_size(alice, bob):
    """Starts queued together (``chat_app.turn_store._batch``) share the two pipelines: 2 round
    trips for the batch, not 2 (or, before, 7) per start, and each start's rows are its
    own."""
    from chat_app.models import RunEvent

    chats = [conversation_create(owner=owner, model="offline") for owner in (alice, bob, alice)]
    trips = _RoundTrips()
    with connection.execute_wrapper(trips):
        results = _run_jobs(
            _start_jobs(*((c.owner, c, f"question {i}") for i, c in enumerate(chats)))
        )
    assert [ok for ok, _ in results] == [True, True, True]
    assert trips.count == (2 if connection.vendor == "postgresql" else 3 * BASE_STATEMENTS)
    for i, (chat, (_, prepared)) in enumerate(zip(chats, results, strict=True)):
        run = Run.objects.get(pk=prepared.run_id)
        assert (run.conversation_id, run.status) == (chat.pk, "running")
        message = Message.objects.get(pk=prepared.message_id)
        assert (message.run_id, message.text) == (run.pk, f"question {i}")
        (event,) = RunEvent.objects.filter(run=run)
        assert event.payload["message_id"] == message.pk
        assert prepared.request_kwargs["user_id"] == chat.owner_id
        assert prepared.request_kwargs["history"] == []


@pytest.mark.parametrize(
    "limit", ["OPENPROGRAM_MAX_CONCURRENT_TURNS", "OPENPROGRAM_TURNS_PER_MINUTE"]
)
def test_two_starts_of_one_owner_in_one_batch_count_against_each_other(alice, bob, settings, limit):
    """The limits are counted after the start's own run INSERT, leaving it out, in the
    batch's transaction: an earlier start of the same batch counts, exactly as if the two
    had gone one after the other."""
    from core.api_errors import ThrottledError

    settings.OPENPROGRAM_MAX_CONCURRENT_TURNS = settings.OPENPROGRAM_TURNS_PER_MINUTE = 0
    setattr(settings, limit, 1)
    first, second = (conversation_create(owner=alice, model="offline") for _ in range(2))
    bobs = conversation_create(owner=bob, model="offline")
    results = _run_jobs(
        _start_jobs((alice, first, "one"), (alice, second, "two"), (bob, bobs, "b"))
    )
    (ok_first, prepared), (ok_second, refusal), (ok_bob, _) = results
    assert (ok_first, ok_second, ok_bob) == (True, False, True)
    assert isinstance(refusal, ThrottledError)
    assert Run.objects.get(pk=prepared.run_id).conversation_id == first.pk
    assert not Run.objects.filter(conversation=second).exists()
    assert not Message.objects.filter(conversation=second).exists()


def test_a_start_in_a_batch_closes_its_conversations_orphaned_run_first(alice):
    """A run a stopped server left running is closed under the lock before the new run
    opens, as one by one: its partial reply comes before the new question in history."""
    from chat_app.models import RunEvent
    from chat_app.turn_store import ORPHANED_RUN_ERROR

    chat = conversation_create(owner=alice, model="offline")
    other = conversation_create(owner=alice, model="offline")
    orphan = Run.objects.create(conversation=chat, model="offline", status="running")
    RunEvent.objects.create(run=orphan, seq=1, type="text_delta", payload={"text": "half a rep"})
    results = _run_jobs(_start_jobs((alice, chat, "again"), (alice, other, "elsewhere")))
    assert [ok for ok, _ in results] == [True, True]
    orphan.refresh_from_db()
    assert (orphan.status, orphan.error) == ("error", ORPHANED_RUN_ERROR)
    history = [(m.role, m.content) for m in results[0][1].request_kwargs["history"]]
    assert history == [("assistant", "half a rep")]


def test_an_edit_in_a_batch_supersedes_the_replaced_run_before_the_history_is_read(alice):
    chat = conversation_create(owner=alice, model="offline")
    first = _prepare(alice, chat.pk)
    run_finish(run_id=first.run_id, status="completed", text="first answer")
    (job,) = _start_jobs((alice, chat, "asked again"))
    job[1]["replaces"] = first.run_id
    ((ok, edited),) = _run_jobs([job])
    assert ok and edited.request_kwargs["history"] == []
    assert Run.objects.get(pk=first.run_id).superseded is True
    assert Run.objects.get(pk=edited.run_id).superseded is False


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
    conversation = conversation_create(owner=alice, model="offline")
    first = _prepare(alice, conversation.pk)
    assert first.request_kwargs["history"] == []
    run_finish(run_id=first.run_id, status="completed", text="hi, alice")
    second = start_in_a_batch_of_one(
        user=alice,
        conversation_id=conversation.pk,
        text="and again",
        options=TurnOptions(),
        attended=None,
        may_abandon_orphans=True,
    )
    history = [(m.role, m.content) for m in second.request_kwargs["history"]]
    assert history == [("user", "hello there"), ("assistant", "hi, alice")]
