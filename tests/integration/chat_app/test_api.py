"""The chat API: conversations, run history and unattended turns; bob always gets 404."""

from __future__ import annotations

import pytest

from chat_app.models import Conversation, Message, Run
from chat_app.services import conversation_create

pytestmark = pytest.mark.django_db(transaction=True)


def test_alice_creates_and_lists_her_conversations(alice_client):
    created = alice_client.post(
        "/api/conversations", {"title": "Plans"}, content_type="application/json"
    )
    assert created.status_code == 201
    body = created.json()
    assert (body["title"], body["profile"], body["model"]) == ("Plans", "default", "offline")
    listed = alice_client.get("/api/conversations").json()
    assert [c["id"] for c in listed] == [body["id"]]


def test_the_newest_conversation_is_listed_first(alice_client, alice):
    older = conversation_create(owner=alice, title="older")
    newer = conversation_create(owner=alice, title="newer")
    ids = [c["id"] for c in alice_client.get("/api/conversations").json()]
    assert ids == [str(newer.public_id), str(older.public_id)]


def test_patch_renames_and_remembers_the_composer_choices(alice_client, conversation):
    response = alice_client.patch(
        f"/api/conversations/{conversation.public_id}",
        {"title": "  Renamed   chat ", "plan_mode": True, "web_search_on": False},
        content_type="application/json",
    )
    assert response.status_code == 200
    conversation.refresh_from_db()
    assert conversation.title == "Renamed chat"
    assert conversation.plan_mode and not conversation.web_search_on


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"profile": "no-such-profile"}, "'no-such-profile' does not exist"),
        ({"model": "gpt-imaginary"}, "'gpt-imaginary' is not offered"),
        ({"agent_profile": 999}, "agent profile 999 does not exist"),
        ({"title": "   "}, "cannot be empty"),
    ],
)
def test_patch_rejects_what_cannot_be_used_with_422(alice_client, conversation, body, fragment):
    response = alice_client.patch(
        f"/api/conversations/{conversation.public_id}", body, content_type="application/json"
    )
    assert response.status_code == 422
    assert fragment in response.json()["detail"]


def test_bob_gets_404_for_everything_of_alices(bob_client, conversation, alice):
    run = Run.objects.create(conversation=conversation, model="offline")
    path = f"/api/conversations/{conversation.public_id}"
    assert bob_client.get(path).status_code == 404
    assert (
        bob_client.patch(path, {"title": "x"}, content_type="application/json").status_code == 404
    )
    assert bob_client.delete(path).status_code == 404
    assert bob_client.get(f"{path}/runs").status_code == 404
    assert bob_client.get(f"/api/runs/{run.pk}").status_code == 404
    turn = bob_client.post(f"{path}/turns", {"text": "hi"}, content_type="application/json")
    assert turn.status_code == 404
    assert bob_client.get("/api/conversations").json() == []
    assert Conversation.objects.filter(pk=conversation.pk, title="").exists()


def test_anonymous_api_calls_get_401(client, conversation):
    assert client.get("/api/conversations").status_code == 401
    assert client.get(f"/api/conversations/{conversation.public_id}").status_code == 401


def test_delete_removes_the_conversation_and_its_history(alice_client, conversation):
    Run.objects.create(conversation=conversation, model="offline", status="completed")
    assert alice_client.delete(f"/api/conversations/{conversation.public_id}").status_code == 204
    assert not Conversation.objects.filter(pk=conversation.pk).exists()
    assert not Run.objects.filter(conversation_id=conversation.pk).exists()


def test_a_conversation_with_a_running_turn_cannot_be_deleted(alice_client, conversation):
    Run.objects.create(conversation=conversation, model="offline", status="running")
    response = alice_client.delete(f"/api/conversations/{conversation.public_id}")
    assert response.status_code == 409
    assert "stop it first" in response.json()["detail"]


def test_an_api_turn_runs_unattended_to_completion(alice_client, conversation):
    response = alice_client.post(
        f"/api/conversations/{conversation.public_id}/turns",
        {"text": "which tools do I have?"},
        content_type="application/json",
    )
    assert response.status_code == 200
    outcome = response.json()
    assert outcome["status"] == "completed"
    assert "read" in outcome["text"]
    conversation.refresh_from_db()
    assert conversation.title == "Which tools do I have?"
    detail = alice_client.get(f"/api/runs/{outcome['run_id']}").json()
    assert detail["attended"] is False
    assert "ask_user_question" not in detail["tools"]  # withheld when nobody is attending
    kinds = [e["type"] for e in detail["events"]]
    assert kinds[0] == "user_message" and kinds[-1] == "assistant_message"
    assert any(item["name"] == "ask_user_question" for item in detail["explain"])
    runs = alice_client.get(f"/api/conversations/{conversation.public_id}/runs").json()
    assert [r["id"] for r in runs] == [outcome["run_id"]]


def test_an_api_turn_denies_a_call_that_needs_approval(alice_client, conversation):
    response = alice_client.post(
        f"/api/conversations/{conversation.public_id}/turns",
        {"text": "/bash echo hi"},
        content_type="application/json",
    )
    outcome = response.json()
    detail = alice_client.get(f"/api/runs/{outcome['run_id']}").json()
    (call,) = detail["tool_calls"]
    assert (call["name"], call["status"], call["is_error"]) == ("bash", "denied", True)
    assert call["arguments"] == {"command": "echo hi"}
    resolved = next(e for e in detail["events"] if e["type"] == "approval_resolved")
    assert resolved["approved"] is False


def test_later_prompts_carry_text_but_never_tool_results(alice_client, conversation, alice):
    from chat_app.selectors import conversation_history

    alice_client.post(
        f"/api/conversations/{conversation.public_id}/turns",
        {"text": "/read path=missing.txt"},
        content_type="application/json",
    )
    run = Run.objects.get(conversation=conversation)
    assert run.tool_calls.get().result_preview  # the result lives in run history...
    latest = Message.objects.create(conversation=conversation, role="user", text="next")
    history = conversation_history(conversation=conversation, before=latest)
    # ...while the next prompt gets exactly the user and assistant text.
    assert [(m.role, m.content) for m in history] == [
        ("user", "/read path=missing.txt"),
        ("assistant", run.text),
    ]


def test_a_run_left_running_by_a_stopped_server_is_closed_by_the_next_turn(
    alice_client, conversation
):
    Run.objects.create(conversation=conversation, model="offline", status="running")
    response = alice_client.post(
        f"/api/conversations/{conversation.public_id}/turns",
        {"text": "hello"},
        content_type="application/json",
    )
    # One process (in-memory layer) and no task owns that run: it is closed as abandoned.
    assert response.status_code == 200
    stale = Run.objects.filter(conversation=conversation).order_by("started").first()
    assert stale.status == "error" and stale.error == "the server running this turn stopped"


def test_a_turn_with_a_keyless_model_is_refused_before_it_starts(
    alice_client, conversation, settings, monkeypatch
):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    settings.OPENPROGRAM_MODELS = ["offline", "openai/gpt-4o-mini"]
    response = alice_client.post(
        f"/api/conversations/{conversation.public_id}/turns",
        {"text": "hi", "model": "openai/gpt-4o-mini"},
        content_type="application/json",
    )
    assert response.status_code == 422
    assert "needs OPENAI_API_KEY" in response.json()["detail"]
    assert not Run.objects.filter(conversation=conversation).exists()


def test_an_agent_profile_narrows_the_turns_tools(alice_client, conversation, alice):
    from tools_app.models import AgentProfile

    agent = AgentProfile.objects.create(
        owner=alice,
        name="reader",
        system_prompt="Only read.",
        tools={"toolset": None, "enabled": [], "disabled": ["bash", "write"], "allowed": []},
    )
    alice_client.patch(
        f"/api/conversations/{conversation.public_id}",
        {"agent_profile": agent.pk},
        content_type="application/json",
    )
    outcome = alice_client.post(
        f"/api/conversations/{conversation.public_id}/turns",
        {"text": "hello"},
        content_type="application/json",
    ).json()
    tools = alice_client.get(f"/api/runs/{outcome['run_id']}").json()["tools"]
    assert "read" in tools
    assert "bash" not in tools and "write" not in tools
    cleared = alice_client.patch(
        f"/api/conversations/{conversation.public_id}",
        {"agent_profile": None},
        content_type="application/json",
    )
    assert cleared.json()["agent_profile"] is None


def test_the_profile_picked_for_a_turn_is_remembered_and_applied(alice_client, conversation, alice):
    from tools_app.models import ToolProfile

    ToolProfile.objects.create(owner=alice, name="tiny", tools=["read", "glob"])
    outcome = alice_client.post(
        f"/api/conversations/{conversation.public_id}/turns",
        {"text": "/bash echo hi", "profile": "tiny"},
        content_type="application/json",
    ).json()
    assert "'bash' is not offered" in outcome["text"]
    detail = alice_client.get(f"/api/runs/{outcome['run_id']}").json()
    assert sorted(detail["tools"]) == ["glob", "read"]
    assert detail["profile"] == "tiny"
    conversation.refresh_from_db()
    assert conversation.profile_name == "tiny"
