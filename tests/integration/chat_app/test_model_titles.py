"""A new conversation's title from its own model (chat_app/model_titles.py), through real
chat turns: litellm against the local fake OpenAI server, the usage ledger, the budget."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from decimal import Decimal

import pytest
from asgiref.sync import sync_to_async

from chat_app import model_titles
from chat_app.model_titles import TITLE_PROMPT
from chat_app.models import Conversation
from chat_app.schemas import TurnOptions
from chat_app.services import conversation_create
from chat_app.turns import turn_run_to_completion, turn_start
from openprogram.providers.pricing import ModelPrice, set_price_overrides
from tests.fakes.openai_server import FakeOpenAIServer, text_reply
from usage_app.models import ModelCall, UserBudget

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


def _reply(text: str, prompt: int = 100, completion: int = 10):
    reply = text_reply(text)
    reply.usage = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    return reply


async def _attended_turn(user, text: str, **conversation) -> Conversation:
    made = await sync_to_async(conversation_create)(owner=user, model=MODEL, **conversation)
    turn = await turn_start(
        user=user, conversation_id=made.pk, text=text, options=TurnOptions(), attended=True
    )
    assert (await turn.task).status == "completed"
    return made


async def _asks_done() -> None:
    """Every title ask started so far has ended. A turn's ask starts in a done callback of
    its task, which runs before anything awaiting the task resumes."""
    await asyncio.gather(*list(model_titles._pending), return_exceptions=True)


async def _title_settles(conversation: Conversation) -> str:
    """The title once the ask the turn started (if any) has ended."""
    await _asks_done()
    return (await Conversation.objects.aget(pk=conversation.pk)).title


async def test_the_first_reply_gets_a_title_from_the_model_counted_in_usage(alice, fake_openai):
    fake_openai.script(
        _reply("High tide comes twice a day."), _reply('"Tides and their timing."', 2000, 10)
    )

    conversation = await _attended_turn(alice, "when is high tide?")

    assert await _title_settles(conversation) == "Tides and their timing"
    asked = fake_openai.requests[1]["messages"]
    assert asked[0] == {"role": "system", "content": TITLE_PROMPT}
    assert "when is high tide?" in asked[1]["content"]
    assert "High tide comes twice a day." in asked[1]["content"]
    # Counted in alice's usage: the title's call has its own ledger row, priced.
    calls = [c async for c in ModelCall.objects.filter(user=alice).order_by("id")]
    assert len(calls) == 2 and calls[1].prompt_tokens == 2000
    assert calls[1].cost_usd.quantize(Decimal("0.0001")) == Decimal("0.0062")  # 0.006 + 0.00015


async def test_only_the_first_turn_asks(alice, fake_openai):
    fake_openai.script(_reply("one"), _reply("First title"), _reply("two"))
    conversation = await _attended_turn(alice, "first question")
    assert await _title_settles(conversation) == "First title"

    turn = await turn_start(
        user=alice,
        conversation_id=conversation.pk,
        text="second question",
        options=TurnOptions(),
        attended=True,
    )
    await turn.task
    await _asks_done()

    assert len(fake_openai.requests) == 3
    assert (await Conversation.objects.aget(pk=conversation.pk)).title == "First title"


async def test_an_unattended_turn_asks_for_no_title(alice, fake_openai):
    fake_openai.script(_reply("done"), _reply("Should not be asked"))
    made = await sync_to_async(conversation_create)(owner=alice, model=MODEL)

    await turn_run_to_completion(
        user=alice, conversation_id=made.pk, text="nightly report", options=TurnOptions()
    )
    await _asks_done()

    assert len(fake_openai.requests) == 1
    assert (await Conversation.objects.aget(pk=made.pk)).title == "Nightly report"


async def test_no_title_is_asked_over_budget(alice, fake_openai):
    await UserBudget.objects.acreate(user=alice, monthly_usd=Decimal("0.40"))
    fake_openai.script(_reply("Hi!", prompt=100_000, completion=10_000), _reply("Too dear"))

    conversation = await _attended_turn(alice, "hello there")  # 0.45 spent: over from now on
    await _asks_done()

    assert len(fake_openai.requests) == 1
    assert (await Conversation.objects.aget(pk=conversation.pk)).title == "Hello there"


async def test_a_title_of_ones_own_is_kept(alice, fake_openai):
    fake_openai.script(_reply("Sure."), _reply("Model title"))

    conversation = await _attended_turn(alice, "plan my week", title="My week")
    await _asks_done()

    assert len(fake_openai.requests) == 1
    assert (await Conversation.objects.aget(pk=conversation.pk)).title == "My week"


async def test_the_offline_model_is_not_asked(alice, fake_openai):
    made = await sync_to_async(conversation_create)(owner=alice, model="offline")
    turn = await turn_start(
        user=alice, conversation_id=made.pk, text="/list_dir", options=TurnOptions(), attended=True
    )
    await turn.task
    await _asks_done()

    assert fake_openai.requests == []
    assert (await Conversation.objects.aget(pk=made.pk)).title == "list_dir"
