"""Usage and budgets through real chat turns (litellm against the local fake server)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from decimal import Decimal

import pytest
from asgiref.sync import sync_to_async

from chat_app.models import Run
from chat_app.schemas import TurnOptions
from chat_app.services import conversation_create
from chat_app.turns import turn_run_to_completion
from openprogram.providers.pricing import ModelPrice, set_price_overrides
from tests.fakes.openai_server import FakeOpenAIServer, text_reply
from usage_app.models import DefaultBudget, ModelCall, UserBudget

MODEL = "openai/fake-model"
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def fake_openai(settings, monkeypatch) -> Iterator[FakeOpenAIServer]:
    settings.OPENPROGRAM_MODELS = ["offline", MODEL]
    with FakeOpenAIServer() as server:
        monkeypatch.setenv("OPENPROGRAM_API_BASE", server.base_url)
        monkeypatch.setenv("OPENPROGRAM_API_KEY", "test")
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        set_price_overrides({MODEL: ModelPrice(input=3.0, output=15.0)})
        yield server
        set_price_overrides({})


def _reply(text: str, prompt: int, completion: int):
    reply = text_reply(text)
    reply.usage = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    return reply


async def _turn(user, text: str = "hello"):
    conversation = await sync_to_async(conversation_create)(owner=user, model=MODEL)
    return await turn_run_to_completion(
        user=user, conversation_id=conversation.pk, text=text, options=TurnOptions()
    )


async def test_each_model_call_is_priced_and_recorded_to_the_cent(alice, fake_openai):
    fake_openai.script(_reply("Hi!", prompt=100_000, completion=10_000))

    outcome = await _turn(alice)

    assert outcome.status == "completed"
    call = await ModelCall.objects.aget(user=alice)
    assert (call.model, call.prompt_tokens, call.completion_tokens) == (MODEL, 100_000, 10_000)
    assert call.cost_usd.quantize(Decimal("0.01")) == Decimal("0.45")  # 0.30 + 0.15
    run = await Run.objects.aget(pk=outcome.run_id)
    assert round(run.usage["cost_usd"], 2) == 0.45
    assert run.usage["prompt_tokens"] == 100_000


async def test_a_turn_over_budget_is_refused_before_any_model_call(alice, fake_openai):
    await UserBudget.objects.acreate(user=alice, monthly_usd=Decimal("0.40"))
    fake_openai.script(_reply("first", prompt=100_000, completion=10_000))
    assert (await _turn(alice)).status == "completed"  # 0.45 spent: over from now on

    outcome = await _turn(alice, "again")

    assert len(fake_openai.requests) == 1
    assert outcome.status == "stopped"
    assert "monthly budget is spent" in outcome.error
    assert await ModelCall.objects.filter(user=alice).acount() == 1


async def test_the_default_budget_applies_to_users_without_their_own(alice, bob, fake_openai):
    await DefaultBudget.objects.acreate(monthly_usd=Decimal("0"))
    await UserBudget.objects.acreate(user=bob, monthly_usd=Decimal("5"))
    fake_openai.script(_reply("for bob", prompt=10, completion=10))

    refused = await _turn(alice)
    allowed = await _turn(bob)

    assert refused.status == "stopped" and "budget" in refused.error
    assert allowed.status == "completed"


def test_a_user_sees_only_their_own_usage(alice, bob, client):
    ModelCall.objects.create(user=alice, model="alice-model", cost_usd=Decimal("1.25"))
    ModelCall.objects.create(user=bob, model="bob-model", cost_usd=Decimal("2"))
    client.force_login(alice)

    page = client.get("/usage/").content.decode()

    assert "alice-model" in page and "1.2500" in page
    assert "bob-model" not in page


def test_the_overview_and_csv_are_staff_only(bob_client):
    assert bob_client.get("/usage/all/").status_code == 302
    assert bob_client.get("/usage/all.csv").status_code == 302


def test_staff_sort_every_user_and_export_csv_safely(admin_client, alice, django_user_model):
    mallory = django_user_model.objects.create_user("=HYPERLINK(evil)", password="x" * 12)
    ModelCall.objects.create(user=alice, model="m", cost_usd=Decimal("3"), prompt_tokens=7)
    ModelCall.objects.create(user=mallory, model="m", cost_usd=Decimal("1"), price_known=False)
    UserBudget.objects.create(user=alice, monthly_usd=Decimal("10"))

    page = admin_client.get("/usage/all/?sort=cost&dir=desc").content.decode()
    assert page.index("alice") < page.index("HYPERLINK")
    ascending = admin_client.get("/usage/all/?sort=cost&dir=asc").content.decode()
    assert ascending.index("HYPERLINK") < ascending.index("alice")

    response = admin_client.get("/usage/all.csv?sort=cost&dir=desc")
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert response["Content-Type"].startswith("text/csv")
    assert rows[0][:5] == ["user", "model_calls", "prompt_tokens", "completion_tokens", "cost_usd"]
    by_user = {row[0]: row for row in rows[1:]}
    assert by_user["alice"][4] == "3.000000" and by_user["alice"][6] == "10.00"
    assert "'=HYPERLINK(evil)" in by_user  # never a formula in a spreadsheet
    assert by_user["'=HYPERLINK(evil)"][5] == "1"


def test_a_malformed_budget_is_refused_in_the_form(admin_client, alice):
    url = "/admin/usage_app/userbudget/add/"
    for bad in ("lots", "-5"):
        response = admin_client.post(url, {"user": alice.pk, "monthly_usd": bad})
        assert response.status_code == 200
        assert "errornote" in response.content.decode()
    assert not UserBudget.objects.exists()
    admin_client.post(url, {"user": alice.pk, "monthly_usd": "12.50"})
    assert UserBudget.objects.get(user=alice).monthly_usd == Decimal("12.50")


def test_the_api_reports_my_month_and_nobody_elses(alice, bob, client):
    ModelCall.objects.create(user=alice, model="a", cost_usd=Decimal("0.5"), prompt_tokens=3)
    ModelCall.objects.create(user=bob, model="b", cost_usd=Decimal("9"))
    UserBudget.objects.create(user=alice, monthly_usd=Decimal("2"))
    client.force_login(alice)

    body = client.get("/api/usage").json()

    assert Decimal(body["spent_usd"]) == Decimal("0.5")
    assert Decimal(body["budget_usd"]) == Decimal("2")
    assert [row["key"] for row in body["by_model"]] == ["a"]
    assert body["by_model"][0]["prompt_tokens"] == 3


def test_the_api_needs_a_login(client):
    assert client.get("/api/usage").status_code == 401


def test_each_finished_run_shows_its_tokens_and_cost(alice, client):
    from chat_app.models import Conversation

    conversation = Conversation.objects.create(owner=alice, model=MODEL)
    Run.objects.create(
        conversation=conversation,
        model=MODEL,
        status="completed",
        usage={
            "prompt_tokens": 1200,
            "completion_tokens": 34,
            "cost_usd": 0.0123,
            "price_known": True,
        },
    )
    client.force_login(alice)

    page = client.get(f"/c/{conversation.public_id}/").content.decode()

    assert "1,234 tokens · 0.0123 USD" in page


async def test_a_nested_runs_budget_check_counts_the_whole_runs_calls(alice):
    from chat_app.models import Conversation
    from chat_app.turns import ActiveTurn

    await UserBudget.objects.acreate(user=alice, monthly_usd=Decimal("1.00"))
    conversation = await Conversation.objects.acreate(owner=alice, model=MODEL)
    run = await Run.objects.acreate(conversation=conversation, model=MODEL, status="running")
    turn = ActiveTurn(
        conversation_id=conversation.pk, owner_id=alice.pk, run_id=run.pk, request=None
    )
    assert await turn.budget_check(0.0) is None

    # The outer loop's call, then a nested run asking with only its own (zero) cost.
    await turn.emit({"type": "model_call", "model": MODEL, "cost_usd": 1.5, "prompt_tokens": 10})
    await turn.flush()

    assert "budget" in (await turn.budget_check(0.0) or "")
    assert await ModelCall.objects.filter(run=run, cost_usd=Decimal("1.5")).aexists()


def test_one_query_gives_the_budget_that_applies_and_the_month_spent(alice, bob, admin_user):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from usage_app.selectors import budget_and_spend

    conversation = conversation_create(owner=alice)
    run = Run.objects.create(conversation=conversation, model="offline")
    DefaultBudget.objects.create(monthly_usd=Decimal("5"))
    UserBudget.objects.create(user=alice, monthly_usd=Decimal("2.50"))
    ModelCall.objects.create(user=alice, run=run, cost_usd=Decimal("0.10"))
    ModelCall.objects.create(user=alice, cost_usd=Decimal("0.20"))  # its run was deleted
    ModelCall.objects.create(user=bob, cost_usd=Decimal("7"))

    with CaptureQueriesContext(connection) as queries:
        alices = budget_and_spend(user_id=alice.pk)
    assert len(queries) == 1
    assert alices == (Decimal("2.50"), Decimal("0.30"))
    assert budget_and_spend(user_id=alice.pk, exclude_run_id=run.pk) == (
        Decimal("2.50"),
        Decimal("0.20"),
    )
    assert budget_and_spend(user_id=bob.pk) == (Decimal("5"), Decimal("7"))
    DefaultBudget.objects.all().delete()
    assert budget_and_spend(user_id=admin_user.pk) == (None, Decimal(0))


async def test_a_turn_sees_what_a_concurrent_turn_of_the_same_user_spent(alice):
    from chat_app.models import Conversation
    from chat_app.turns import ActiveTurn

    await UserBudget.objects.acreate(user=alice, monthly_usd=Decimal("1.00"))
    turns = []
    for _ in range(2):
        conversation = await Conversation.objects.acreate(owner=alice, model=MODEL)
        run = await Run.objects.acreate(conversation=conversation, model=MODEL, status="running")
        turns.append(
            ActiveTurn(
                conversation_id=conversation.pk, owner_id=alice.pk, run_id=run.pk, request=None
            )
        )
    first, second = turns
    assert await second.budget_check(0.0) is None

    await first.emit({"type": "model_call", "model": MODEL, "cost_usd": 1.25})
    await first.flush()

    # The other turn's recorded call counts: neither starts another model call.
    assert "monthly budget is spent" in (await second.budget_check(0.0) or "")
    assert "reached your monthly budget" in (await first.budget_check(0.0) or "")
