"""Agent profiles edited from their page."""

from __future__ import annotations

import pytest

from tools_app import agent_profile_services, services
from tools_app.models import AgentProfile

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}


def test_the_page_offers_tool_profiles_and_presets_as_toolsets(alice, alice_client):
    services.profile_create(owner=alice, name="lean", tools=["read_notes"])
    html = alice_client.get("/programs/agents/").content.decode()
    assert '<option value="lean"' in html
    assert '<option value="notes"' in html  # an author-declared toolset


def test_create_update_and_delete_an_agent_profile(alice, alice_client):
    alice_client.post(
        "/programs/agents/new/",
        {"name": "bot", "model": "offline", "toolset": "notes", "disabled": "write_notes, x"},
        **HX,
    )
    agent = AgentProfile.objects.get(owner=alice, name="bot")
    assert agent.tools == {
        "toolset": "notes",
        "enabled": [],
        "disabled": ["write_notes", "x"],
        "allowed": [],
    }
    alice_client.post(
        f"/programs/agents/{agent.pk}/", {"name": "bot", "system_prompt": "Be brief."}, **HX
    )
    agent.refresh_from_db()
    assert (agent.system_prompt, agent.tools["toolset"]) == ("Be brief.", None)
    alice_client.post(f"/programs/agents/{agent.pk}/delete/", **HX)
    assert not AgentProfile.objects.filter(pk=agent.pk).exists()


def test_errors_show_beside_the_form_and_save_nothing(alice_client):
    html = alice_client.post(
        "/programs/agents/new/", {"name": "bot", "toolset": "no-such-set"}, **HX
    ).content.decode()
    assert 'data-testid="form-error"' in html
    assert "&#x27;no-such-set&#x27;" in html
    assert not AgentProfile.objects.exists()


def test_bob_cannot_edit_or_delete_alices_agent(alice, bob_client):
    agent = agent_profile_services.agent_profile_create(owner=alice, name="bot")
    html = bob_client.post(f"/programs/agents/{agent.pk}/", {"name": "mine"}, **HX)
    assert "No agent profile with id" in html.content.decode()
    bob_client.post(f"/programs/agents/{agent.pk}/delete/", **HX)
    agent.refresh_from_db()
    assert agent.name == "bot"
    assert "bot" not in bob_client.get("/programs/agents/").content.decode()
