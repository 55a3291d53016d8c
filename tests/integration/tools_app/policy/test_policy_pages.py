"""The Policy page (staff), the rules on a user's Programs page, saved rules on Account."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from openprogram.agent.types import AgentTool
from openprogram.programs import registry
from tools_app.policy.models import PolicyRule

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def shell(known_tools):
    registry.register(AgentTool(name="bash", description="Run.", requires_approval=True))


@pytest.fixture
def staff(admin_user) -> Client:
    client = Client()
    client.force_login(admin_user)
    return client


def test_the_policy_page_is_for_staff_only(alice_client):
    response = alice_client.get("/programs/policy/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_staff_see_every_tools_verdict_for_a_group_with_the_deciding_rule(staff):
    interns = Group.objects.create(name="interns")
    rule = PolicyRule.objects.create(
        scope="group", group=interns, tool="bash", verdict="deny", reason="not yet"
    )
    page = staff.get(f"/programs/policy/?group={interns.pk}").content.decode()
    assert "group &#x27;interns&#x27;" in page
    row = page.split('data-tool="bash"', 1)[1].split("</tr>", 1)[0]
    assert "removed" in row and f"rule #{rule.pk}" in row and "not yet" in row
    write = page.split('data-tool="write_notes"', 1)[1].split("</tr>", 1)[0]
    assert ">ask<" in write and "the tool&#x27;s default" in write


def test_the_simulator_page_shows_the_verdict_and_the_rules_considered(staff, bob):
    PolicyRule.objects.create(
        scope="org",
        tool="bash",
        verdict="allow",
        condition_kind="command",
        condition_values="git status*",
        reason="safe",
    )
    page = staff.post(
        "/programs/policy/",
        {"user": bob.pk, "tool": "bash", "arguments": '{"command": "git status; rm -rf ~"}'},
    ).content.decode()
    assert "<strong>ask</strong>" in page and "condition does not hold" in page


def test_a_users_programs_page_shows_the_rules_that_reach_them_and_not_bobs(
    alice, bob, alice_client
):
    interns = Group.objects.create(name="interns")
    alice.groups.add(interns)
    PolicyRule.objects.create(scope="org", tool="write_notes", verdict="ask", reason="org words")
    PolicyRule.objects.create(
        scope="group", group=interns, tool="bash", verdict="deny", reason="intern words"
    )
    PolicyRule.objects.create(
        scope="group",
        group=Group.objects.create(name="eng"),
        tool="bash",
        verdict="allow",
        reason="eng words",
    )
    PolicyRule.objects.create(
        scope="user", user=bob, tool="bash", verdict="allow", reason="bob secret words"
    )
    page = alice_client.get("/programs/").content.decode()
    section = page.split('data-testid="policy-reaching"', 1)[1].split("</section>", 1)[0]
    assert "org words" in section and "intern words" in section
    assert "eng words" not in section and "bob secret words" not in section


def test_account_lists_and_revokes_your_saved_rules_only(alice, bob, alice_client):
    mine = PolicyRule.objects.create(
        scope="user",
        user=alice,
        tool="bash",
        verdict="allow",
        condition_kind="command",
        condition_values="git status",
    )
    theirs = PolicyRule.objects.create(scope="user", user=bob, tool="bash", verdict="allow")
    page = alice_client.get("/account/").content.decode()
    assert "bash: git status" in page and f'data-rule="{theirs.pk}"' not in page
    assert alice_client.post(f"/programs/policy/rules/{theirs.pk}/revoke/").status_code == 404
    assert alice_client.post(f"/programs/policy/rules/{mine.pk}/revoke/").status_code == 302
    assert list(PolicyRule.objects.values_list("pk", flat=True)) == [theirs.pk]
