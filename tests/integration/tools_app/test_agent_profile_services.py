"""Agent profiles: a checked tools field, per-owner names, never another user's."""

from __future__ import annotations

import pytest

from core.api_errors import ConflictError, NotFoundError, UnprocessableError
from tools_app import agent_profile_services
from tools_app.models import AgentProfile

pytestmark = pytest.mark.django_db


def test_agent_profile_toolset_must_be_known(alice):
    with pytest.raises(UnprocessableError, match="'nonsense'"):
        agent_profile_services.agent_profile_create(
            owner=alice, name="bot", tools={"toolset": "nonsense"}
        )
    with pytest.raises(UnprocessableError, match="Unknown keys"):
        agent_profile_services.agent_profile_create(owner=alice, name="bot", tools={"tooset": "fs"})
    agent = agent_profile_services.agent_profile_create(
        owner=alice, name="bot", tools={"toolset": "notes"}
    )
    assert agent.tools == {"toolset": "notes", "enabled": [], "disabled": [], "allowed": []}


def test_agent_profiles_are_per_owner(alice, bob):
    agent = agent_profile_services.agent_profile_create(owner=alice, name="bot", model="offline")
    with pytest.raises(NotFoundError):
        agent_profile_services.agent_profile_update(owner=bob, pk=agent.pk, name="stolen")
    with pytest.raises(NotFoundError):
        agent_profile_services.agent_profile_delete(owner=bob, pk=agent.pk)
    with pytest.raises(ConflictError):
        agent_profile_services.agent_profile_create(owner=alice, name="BOT")
    agent_profile_services.agent_profile_update(owner=alice, pk=agent.pk, system_prompt="Be brief.")
    assert AgentProfile.objects.get(pk=agent.pk).system_prompt == "Be brief."
