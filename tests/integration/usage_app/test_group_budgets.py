"""Group budgets: a member's budget is the smallest of theirs and each of their groups'."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.auth.models import Group

from usage_app.budgets import budget_effective
from usage_app.models import DefaultBudget, GroupBudget, ModelCall, UserBudget
from usage_app.selectors import budget_and_spend, budget_for_user

pytestmark = pytest.mark.django_db


def _group(name: str, cap: str, *members) -> Group:
    group = Group.objects.create(name=name)
    GroupBudget.objects.create(group=group, monthly_usd=Decimal(cap))
    for member in members:
        member.groups.add(group)
    return group


def test_the_smallest_of_own_and_each_group_applies(alice, bob):
    UserBudget.objects.create(user=alice, monthly_usd=Decimal("50"))
    _group("interns", "20", alice)
    _group("eng", "30", alice, bob)
    ModelCall.objects.create(user=alice, model="m", cost_usd=Decimal("5"))
    assert budget_effective(user_id=alice.pk) == budget_effective(user_id=alice.pk)
    effective = budget_effective(user_id=alice.pk)
    assert effective.amount == Decimal("20") and effective.source == "group 'interns'"
    assert budget_and_spend(user_id=alice.pk) == (Decimal("20.00"), Decimal("5"))
    assert budget_for_user(user_id=bob.pk) == Decimal("30")  # bob is not an intern


def test_the_default_counts_as_a_users_own_and_may_be_the_smallest(alice):
    DefaultBudget.objects.create(monthly_usd=Decimal("10"))
    _group("eng", "30", alice)
    effective = budget_effective(user_id=alice.pk)
    assert effective.amount == Decimal("10") and effective.source == "the default"
    assert budget_and_spend(user_id=alice.pk)[0] == Decimal("10.00")


def test_without_any_budget_there_is_no_limit(alice):
    assert budget_effective(user_id=alice.pk).amount is None
    assert budget_and_spend(user_id=alice.pk) == (None, Decimal(0))


def test_a_group_cap_alone_applies(alice):
    _group("eng", "7.5", alice)
    assert budget_and_spend(user_id=alice.pk)[0] == Decimal("7.50")


def test_the_usage_page_states_the_budget_and_where_it_comes_from(alice, alice_client):
    UserBudget.objects.create(user=alice, monthly_usd=Decimal("50"))
    _group("interns", "20", alice)
    page = alice_client.get("/usage/").content.decode()
    assert "20.00 USD" in page and "group &#x27;interns&#x27;" in page
