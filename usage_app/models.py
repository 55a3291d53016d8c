"""What each model call cost, and what each user may spend a month.

One ``ModelCall`` row per provider call, written as the call finishes: the database
is the truth for budgets across server processes.
"""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models

__all__ = ["DefaultBudget", "GroupBudget", "ModelCall", "UserBudget"]

_MONEY = {"max_digits": 12, "decimal_places": 2, "validators": [MinValueValidator(Decimal(0))]}


class ModelCall(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="model_calls"
    )
    run = models.ForeignKey(
        "chat_app.Run", on_delete=models.SET_NULL, null=True, blank=True, related_name="model_calls"
    )
    model = models.CharField(max_length=200)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    cached_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=14, decimal_places=8, default=Decimal(0))
    price_known = models.BooleanField(default=True)
    estimated = models.BooleanField(default=False)
    created = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created"]
        indexes = [models.Index(fields=["user", "created"])]

    def __str__(self) -> str:
        return f"{self.model} for {self.user_id} at {self.created:%Y-%m-%d %H:%M}"


class UserBudget(models.Model):
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="budget"
    )
    monthly_usd = models.DecimalField(
        "monthly budget (USD)", help_text="Spending limit per calendar month (UTC).", **_MONEY
    )

    def __str__(self) -> str:
        return f"{self.user} — {self.monthly_usd} USD a month"


class DefaultBudget(models.Model):
    """The budget of every user without one of their own; a single row (empty = no limit)."""

    monthly_usd = models.DecimalField(
        "default monthly budget (USD)",
        null=True,
        blank=True,
        help_text="Empty means no limit for users without a budget of their own.",
        max_digits=12,
        decimal_places=2,
        validators=[MinValueValidator(Decimal(0))],
    )

    def save(self, *args, **kwargs) -> None:
        self.pk = 1
        super().save(*args, **kwargs)

    def __str__(self) -> str:
        return "no default limit" if self.monthly_usd is None else f"{self.monthly_usd} USD a month"


class GroupBudget(models.Model):
    """A cap per member of a group per month: a member's budget is the smallest that applies."""

    group = models.OneToOneField("auth.Group", on_delete=models.CASCADE, related_name="budget")
    monthly_usd = models.DecimalField(
        "monthly budget per member (USD)",
        help_text="Each member may spend at most this per calendar month (UTC).",
        **_MONEY,
    )

    def __str__(self) -> str:
        return f"{self.group} — {self.monthly_usd} USD a month per member"
