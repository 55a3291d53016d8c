"""A real MCP server asks the person mid-call: forms, links, refusals, unattended turns."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from openprogram.agent.context import TurnContext, current_turn
from openprogram.agent.elicitation import (
    ElicitationAnswer,
    ElicitationRequest,
    ElicitationRequested,
    ElicitationResolved,
    elicitation_hook_for_turn,
)
from openprogram.mcp import MCPTool
from openprogram.programs import registry

from .conftest import LEGACY, MODERN, WAIT, protocol_config

# Every test runs against a server of each revision: 2026-07-28 asks through
# input_required rounds of the call itself, 2025-11-25 through elicitation/create.
pytestmark = pytest.mark.parametrize("proto", [MODERN, LEGACY], indirect=True)


def _tool(name: str) -> MCPTool:
    tool = registry.get(f"mcp__proto__{name}")
    assert isinstance(tool, MCPTool)
    return tool


class Person:
    """The person in the chat: records what was shown and answers with ``respond``."""

    def __init__(self, respond: Callable[[ElicitationRequest], Awaitable[ElicitationAnswer]]):
        self.respond = respond
        self.asked: list[ElicitationRequest] = []
        self.events: list[Any] = []

    async def hook(self, request: ElicitationRequest) -> ElicitationAnswer:
        self.asked.append(request)
        return await self.respond(request)

    def turn(self, *, attended: bool = True, timeout: float = 5.0) -> TurnContext:
        async def emit(event: Any) -> None:
            self.events.append(event)

        return TurnContext(
            attended=attended,
            elicitation_hook=elicitation_hook_for_turn(
                host_hook=self.hook, attended=attended, emit=emit, timeout=timeout
            ),
        )


def answering(action: str, content: dict[str, Any] | None = None, delay: float = 0.0) -> Person:
    async def respond(request: ElicitationRequest) -> ElicitationAnswer:
        await asyncio.sleep(delay)
        return ElicitationAnswer(action, content)  # type: ignore[arg-type]

    return Person(respond)


async def _call_in_turn(
    turn: TurnContext | None, name: str, args: dict[str, Any] | None = None, **kwargs: Any
) -> Any:
    token = current_turn.set(turn)
    try:
        return await _tool(name).execute(f"call-{name}", args or {}, **kwargs)
    finally:
        current_turn.reset(token)


async def test_the_client_speaks_the_servers_revision(proto):
    assert proto.status("proto")["protocol_version"] == proto.revision


async def test_a_form_answer_reaches_the_server_with_the_schemas_defaults_filled_in(proto):
    person = answering("accept", {"email": "alice@example.com"})
    result = await _call_in_turn(person.turn(), "ask_profile")
    assert not result.is_error, result.content
    assert json.loads(result.content) == {
        "action": "accept",
        "content": {
            "name": "Alice",
            "age": 30,
            "score": 95.5,
            "subscribe": True,
            "color": "green",
            "email": "alice@example.com",
        },
    }
    (request,) = person.asked
    assert request.mode == "form"
    assert request.tool_call_id == "call-ask_profile"
    assert request.message == "Please fill in your profile"
    fields = {f.name: f for f in request.fields}
    assert fields["color"].kind == "choice"
    assert fields["color"].options == (("red", "Red"), ("green", "Green"))
    assert fields["email"].required and fields["email"].format == "email"
    requested, resolved = person.events
    assert isinstance(requested, ElicitationRequested)
    assert requested.source == "proto"
    assert {f["name"]: f["default"] for f in requested.fields}["age"] == 30
    assert isinstance(resolved, ElicitationResolved) and resolved.action == "accept"


async def test_a_declined_form_is_reported_to_the_server_as_declined(proto):
    result = await _call_in_turn(answering("decline").turn(), "ask_profile")
    assert json.loads(result.content) == {"action": "decline", "content": None}


async def test_an_unattended_turn_declines_without_asking_anyone(proto):
    person = answering("accept", {"email": "alice@example.com"})
    result = await _call_in_turn(person.turn(attended=False), "ask_profile")
    assert json.loads(result.content)["action"] == "decline"
    assert person.asked == []
    assert [type(e) for e in person.events] == [ElicitationRequested, ElicitationResolved]
    assert person.events[1].action == "decline"


async def test_a_call_outside_any_turn_declines(proto):
    result = await _call_in_turn(None, "ask_profile")
    assert json.loads(result.content)["action"] == "decline"


async def test_an_answer_that_does_not_fit_the_form_is_sent_as_cancel(proto):
    person = answering("accept", {"email": "not an email", "age": "old"})
    result = await _call_in_turn(person.turn(), "ask_profile")
    assert json.loads(result.content) == {"action": "cancel", "content": None}
    assert "did not fit the form" in person.events[-1].reason


async def test_nobody_answering_within_the_approval_timeout_cancels(proto):
    person = answering("accept", {"email": "a@example.com"}, delay=30)
    result = await _call_in_turn(person.turn(timeout=0.3), "ask_profile")
    assert json.loads(result.content)["action"] == "cancel"
    assert "no answer within 0.3 s" in person.events[-1].reason


async def test_the_servers_clock_stops_while_the_person_answers(proto):
    env = proto.server_env
    # The call itself fits its 2 s timeout even on a loaded machine; the person's 3 s do not.
    proto.update(protocol_config(timeout=2.0, env=env, confined=False)).result(WAIT)
    try:
        person = answering("accept", {"email": "slow@example.com"}, delay=3.0)
        result = await _call_in_turn(person.turn(timeout=60), "ask_profile")
    finally:
        proto.update(protocol_config(env=env, confined=False)).result(WAIT)
    assert not result.is_error, result.content
    assert json.loads(result.content)["content"]["email"] == "slow@example.com"


async def test_a_malformed_schema_is_refused_with_a_clear_error_and_nothing_else_breaks(proto):
    person = answering("accept", {})
    updates: list[str] = []
    result = await _call_in_turn(person.turn(), "ask_malformed", on_update=updates.append)
    if proto.revision == LEGACY:
        # The refusal is the answer to the server's request; the server reports it.
        assert result.content.startswith("refused:")
    else:
        # The refusal answers the call's input round: the call itself fails.
        assert result.is_error
    assert "field 'address': type 'object' is not a primitive" in result.content
    assert person.asked == [] and person.events == []
    assert any("elicitation refused" in line for line in updates)
    assert proto.status("proto")["state"] == "ready"
    after = await _call_in_turn(answering("decline").turn(), "ask_profile")
    assert json.loads(after.content)["action"] == "decline"


async def test_a_link_is_shown_and_the_persons_consent_goes_back(proto):
    person = answering("accept")
    result = await _call_in_turn(
        person.turn(), "ask_link", {"url": "https://auth.example.com/start?x=1"}
    )
    assert result.content == "link: accept"
    (request,) = person.asked
    assert (request.mode, request.url) == ("url", "https://auth.example.com/start?x=1")
    assert person.events[0].url == "https://auth.example.com/start?x=1"


async def test_a_link_that_is_not_http_is_refused(proto):
    person = answering("accept")
    result = await _call_in_turn(person.turn(), "ask_link", {"url": "javascript:alert(1)"})
    assert result.content.startswith("link:") is False
    assert "http(s) URL" in result.content
    assert person.asked == []
