"""ask_user_question: the person's answer comes back; unattended turns fail at once."""

from __future__ import annotations

from openprogram.agent.context import QuestionRequest
from openprogram.programs.builtin.ask_user_question import ask_user_question


async def test_it_returns_the_persons_answer(turn, call):
    asked: list[QuestionRequest] = []

    async def answer(request: QuestionRequest) -> str:
        asked.append(request)
        return "  Use PostgreSQL  "

    turn.question_hook = answer
    result = await call(
        ask_user_question, {"question": "Which database?", "choices": ["SQLite", "PostgreSQL"]}
    )
    assert not result.is_error and result.content == "Use PostgreSQL"
    assert asked[0].question == "Which database?" and asked[0].choices == ["SQLite", "PostgreSQL"]
    assert asked[0].call_id


async def test_without_choices_it_asks_an_open_question(turn, call):
    seen: list[list[str]] = []

    async def answer(request: QuestionRequest) -> str:
        seen.append(request.choices)
        return "blue"

    turn.question_hook = answer
    result = await call(ask_user_question, {"question": "Favourite colour?"})
    assert result.content == "blue" and seen == [[]]


async def test_an_unattended_turn_gets_an_error_explaining_no_one_is_there(turn, call):
    async def never(request: QuestionRequest) -> str:
        raise AssertionError("must not be asked")

    turn.question_hook = never
    turn.attended = False
    result = await call(ask_user_question, {"question": "Proceed?"})
    assert result.is_error and "no one is there to answer" in result.content


async def test_without_a_hook_or_a_turn_it_fails_clearly(turn, call):
    result = await call(ask_user_question, {"question": "Proceed?"})
    assert result.is_error and "no one is there to answer" in result.content


async def test_bad_choices_and_empty_questions_are_refused(turn, call):
    async def answer(request: QuestionRequest) -> str:
        return "x"

    turn.question_hook = answer
    cases = [
        ({"question": " "}, "empty"),
        ({"question": "Q?", "choices": ["only one"]}, "between 2 and 10"),
        ({"question": "Q?", "choices": ["a", "a"]}, "twice"),
        ({"question": "Q?", "choices": ["a", " "]}, "empty option"),
        ({"question": "Q?", "choices": "a,b"}, "'choices'"),
    ]
    for args, message in cases:
        result = await call(ask_user_question, args)
        assert result.is_error and message in result.content, args
