"""A conversation's title from its own model, asked once its first reply exists.

The automatic title (``chat_app.titles``) is the first message cleaned up; with a real
model the conversation's model is then asked for a short title, as its own small task
after the first turn (never inside the turn's batched writes). It is asked only when:

1. the turn that finished is the conversation's first and it completed;
2. the turn was attended (an unattended script's turn spends nothing extra);
3. the model is a real one (the offline model has nothing to say about titles);
4. the title is still the automatic one (a rename, or an earlier answer, wins);
5. the owner's monthly budget is not spent (``usage_app.services.budget_verdict``).

The call is recorded in the owner's usage like any model call of the turn (a
``ModelCall`` row on that run). The answer replaces the title only if the title is
still the automatic one at that moment (one conditional UPDATE), and the conversation's
open tabs are told (a ``conversation_title`` frame). A failure is logged and changes
nothing: the automatic title stays.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import re

from channels.db import database_sync_to_async
from django.db import transaction

from chat_app.models import TITLE_MAX, Conversation, Run
from chat_app.models import Message as SavedMessage
from chat_app.relay import group_send_safely
from chat_app.titles import TITLE_CHARS, title_from_message
from openprogram.agent.types import Message
from openprogram.providers.pricing import call_cost
from openprogram.providers.retry import RetryPolicy
from openprogram.providers.routing import is_offline
from openprogram.providers.streaming import stream_chat
from usage_app.selectors import budget_and_spend
from usage_app.services import budget_verdict, model_call_record

__all__ = ["TITLE_PROMPT", "conversation_title_ask", "title_after_turn"]

_log = logging.getLogger(__name__)

TITLE_PROMPT = (
    "Write a short title (at most six words) for the conversation below, in its language. "
    "Answer with the title only: no quotes, no final full stop."
)
_EXCERPT_CHARS = 2000
_ASK_TIMEOUT_S = 30.0
_QUOTES = "\"'“”‘’«»`*"
_LABEL = re.compile(r"^(title|titre|titel)\s*:\s*", re.I)
_pending: set[asyncio.Task] = set()  # strong references until each ask is done


@dataclasses.dataclass(frozen=True)
class _Ask:
    model: str
    message: str
    reply: str
    automatic: str


def title_after_turn(
    task: asyncio.Task,
    *,
    conversation_id: int,
    run_id: int,
    owner_id: int,
    attended: bool,
    first: bool,
    model: str,
    title: str,
    text: str,
) -> None:
    """When the turn ``task`` ends: ask for a title in a task of its own.

    What the turn already knows decides here, without a database read, the turns whose
    answer can only be no: unattended (rule 2), not the conversation's first (``first``:
    it had no history; rule 1), the offline model (rule 3), a title at the turn's start
    that was not the automatic one for ``text`` (rule 4). The ask re-checks every rule
    against the database, and the save rule 4 again."""
    if not (attended and first) or is_offline(model) or title != title_from_message(text):
        return

    def ended(done: asyncio.Task) -> None:
        if done.cancelled() or done.exception() is not None:
            return
        if getattr(done.result(), "status", "") != "completed":
            return
        ask = asyncio.ensure_future(
            conversation_title_ask(
                conversation_id=conversation_id, run_id=run_id, owner_id=owner_id
            )
        )
        _pending.add(ask)
        ask.add_done_callback(_pending.discard)

    task.add_done_callback(ended)


async def conversation_title_ask(*, conversation_id: int, run_id: int, owner_id: int) -> str | None:
    """Ask the conversation's model for a title; the title stored, or None (rules above)."""
    try:
        ask = await database_sync_to_async(_ask_for)(
            conversation_id=conversation_id, run_id=run_id, owner_id=owner_id
        )
        if ask is None:
            return None
        text, usage = await asyncio.wait_for(_model_answer(ask), _ASK_TIMEOUT_S)
        title = _clean(text)
        saved = await database_sync_to_async(_title_save)(
            conversation_id=conversation_id,
            run_id=run_id,
            owner_id=owner_id,
            ask=ask,
            title=title,
            usage=usage,
        )
    except Exception:
        _log.exception("could not ask for a title of conversation %r", conversation_id)
        return None
    if saved:
        await _tell_tabs(conversation_id, title)
        return title
    return None


def _ask_for(*, conversation_id: int, run_id: int, owner_id: int) -> _Ask | None:
    """What to ask, or None when a rule says no. It runs after every first turn, so it
    reads only the columns the rules need, cheapest rule first (a run's row carries its
    tool list and resolution explanation, JSON that would be decoded for nothing)."""
    title = (
        Conversation.objects.filter(pk=conversation_id, owner_id=owner_id)
        .values_list("title", flat=True)
        .first()
    )
    if title is None:
        return None
    runs = list(
        Run.objects.filter(conversation_id=conversation_id)
        .order_by("started", "id")
        .values_list("pk", "status", "model")[:2]
    )
    if [pk for pk, _, _ in runs] != [run_id] or runs[0][1] != "completed":
        return None  # rule 1: the first turn, completed
    model = runs[0][2]
    if is_offline(model):
        return None  # rule 3
    said = SavedMessage.objects.filter(run_id=run_id).order_by("created", "id")
    message = said.filter(role="user").values_list("text", flat=True).first() or ""
    automatic = title_from_message(message)
    if title != automatic:
        return None  # rule 4
    reply = said.filter(role="assistant").values_list("text", flat=True).last() or ""
    if not reply:
        return None  # rule 4: nothing to title yet
    budget, recorded = budget_and_spend(user_id=owner_id)
    if budget_verdict(budget=budget, recorded=recorded, turn_cost=0.0) is not None:
        return None  # rule 5
    return _Ask(model=model, message=message, reply=reply, automatic=automatic)


async def _model_answer(ask: _Ask) -> tuple[str, dict[str, int]]:
    conversation = (
        f"The person wrote:\n{ask.message[:_EXCERPT_CHARS]}\n\n"
        f"The assistant replied:\n{ask.reply[:_EXCERPT_CHARS]}"
    )
    text, usage = [], {}
    async for delta in stream_chat(
        model=ask.model,
        messages=[
            Message(role="system", content=TITLE_PROMPT),
            Message(role="user", content=conversation),
        ],
        retry=RetryPolicy(attempts=1),
    ):
        text.append(delta.text)
        if delta.done:
            usage = dict(delta.usage)
    return "".join(text), usage


def _clean(text: str) -> str:
    """The model's answer as a title: its first line, without quotes, a "Title:" label or a
    final full stop, at most ``TITLE_CHARS`` characters; empty when nothing is left."""
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    line = _LABEL.sub("", " ".join(line.split())).strip(_QUOTES + " ").rstrip(".").strip()
    if len(line) > TITLE_CHARS:
        line = line[:TITLE_CHARS].rsplit(" ", 1)[0].rstrip(" ,;:") + "…"
    return line[:TITLE_MAX]


def _title_save(
    *, conversation_id: int, run_id: int, owner_id: int, ask: _Ask, title: str, usage: dict
) -> bool:
    cost = call_cost(ask.model, usage)
    with transaction.atomic():
        model_call_record(
            user_id=owner_id,
            run_id=run_id,
            event={
                "model": ask.model,
                "prompt_tokens": usage.get("prompt_tokens", 0),
                "completion_tokens": usage.get("completion_tokens", 0),
                "cached_tokens": usage.get("cached_tokens", 0),
                "cost_usd": cost.usd,
                "price_known": cost.known,
            },
        )
        if not title:
            return False
        # Still the automatic title: a rename made while the model answered wins.
        return bool(
            Conversation.objects.filter(pk=conversation_id, title=ask.automatic).update(title=title)
        )


async def _tell_tabs(conversation_id: int, title: str) -> None:
    # chat_app.turns imports this module (title_after_turn), so its group name is imported
    # when first needed.
    from chat_app.turns import events_group

    frame = json.dumps({"type": "conversation_title", "title": title})
    await group_send_safely(
        events_group(conversation_id), {"type": "chat.events", "frames": [frame]}
    )
