"""Migration: global disables become organisation deny rules; the always-ask setting seeds marks."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("tools_app", "0006_mcp_oauth_flows_revocation")]
AFTER = [("tools_app", "0008_policy_from_disables_and_always_ask")]


@pytest.fixture
def _migrated_back_to_latest():
    """The tests after this one need every migration: from 0008 back to the newest."""
    yield
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("_migrated_back_to_latest")
def test_disables_become_deny_rules_with_their_reasons_and_marks_are_seeded(settings):
    settings.CHAT_ALWAYS_ASK_TOOLS = frozenset({"bash"})
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    Tool = old.get_model("tools_app", "Tool")
    Tool.objects.create(name="web_fetch", disabled=True, disabled_reason="no web, see ticket 12")
    Tool.objects.create(name="read", disabled=False)
    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    new = executor.loader.project_state(AFTER).apps
    PolicyRule = new.get_model("tools_app", "PolicyRule")
    rules = list(
        PolicyRule.objects.values_list("scope", "tool", "verdict", "condition_kind", "reason")
    )
    assert rules == [("org", "web_fetch", "deny", "", "no web, see ticket 12")]
    assert not new.get_model("tools_app", "Tool").objects.filter(disabled=True).exists()
    marks = new.get_model("tools_app", "AlwaysAskMark").objects.values_list("tool", flat=True)
    assert list(marks) == ["bash"]
