"""The ``ask_user_question`` tool: ask the person in the chat and wait for the answer."""

from __future__ import annotations

import uuid

from openprogram.agent.context import QuestionRequest, get_turn
from openprogram.programs.decorator import function

__all__ = ["NoOneToAsk", "ask_user_question"]

MAX_CHOICES = 10


class NoOneToAsk(RuntimeError):
    """The turn is unattended (or has no way to ask), so a question cannot be answered."""


@function(toolset=["interaction"], label="Ask the user")
async def ask_user_question(question: str, choices: list[str] | None = None) -> str:
    """Ask the person you are working with a question and wait for their answer.

    Use it when you cannot continue well without their decision or information (a choice
    between approaches, a missing detail, a preference) — not for things you can find
    out yourself with other tools. Ask one clear question; offer `choices` (2 to 10
    short options) when the answer is one of a few, and the person may still answer in
    their own words. Returns the answer text. When no one is attending the conversation
    the call fails at once: decide yourself and state the assumption you made.

    Args:
        question: The question, complete and self-contained.
        choices: Optional short answers to pick from.
    """
    question = question.strip()
    if not question:
        raise ValueError("question is empty; write the question to ask")
    options = [choice.strip() for choice in (choices or [])]
    if choices is not None:
        if any(not option for option in options):
            raise ValueError("choices contains an empty option")
        if len(set(options)) != len(options):
            raise ValueError("choices contains the same option twice")
        if not 2 <= len(options) <= MAX_CHOICES:
            raise ValueError(
                f"give between 2 and {MAX_CHOICES} choices, or none (got {len(options)})"
            )
    turn = get_turn()
    if turn is None or not turn.attended or turn.question_hook is None:
        raise NoOneToAsk(
            "no one is there to answer questions in this conversation (it runs unattended); "
            "make the decision yourself and say which assumption you made"
        )
    # The runtime does not hand call ids to tool bodies; this id ties the question to its answer.
    request = QuestionRequest(
        call_id=f"question-{uuid.uuid4().hex[:12]}", question=question, choices=options
    )
    answer = await turn.question_hook(request)
    answer = str(answer).strip()
    return answer if answer else "(the person answered with an empty message)"
