"""Rules, "always ask" marks and the organisation's "deny by default" switch."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from openprogram.programs.rule_conditions import Condition
from openprogram.programs.rules import Rule, rule_problems

__all__ = ["RULE_COLUMNS", "AlwaysAskMark", "PolicyRule", "PolicySettings", "rule_from_values"]

RULE_COLUMNS = (
    "id",
    "scope",
    "tool",
    "verdict",
    "condition_kind",
    "condition_values",
    "condition_pointer",
    "condition_op",
    "condition_value",
    "condition_negate",
    "may_be_relaxed",
    "reason",
)
"""The stored fields a framework ``Rule`` is made of (the group's name aside)."""


def rule_from_values(**values: Any) -> Rule:
    """The framework's ``Rule`` from a stored rule's values (:data:`RULE_COLUMNS`, ``group``)."""
    condition = None
    if values["condition_kind"]:
        entries = values["condition_values"].splitlines()
        condition = Condition(
            kind=values["condition_kind"],
            values=tuple(v.strip() for v in entries if v.strip()),
            pointer=values["condition_pointer"],
            op=values["condition_op"] or "equals",
            value=values["condition_value"],
            negate=bool(values["condition_negate"]),
        )
    return Rule(
        tool=values["tool"].strip(),
        verdict=values["verdict"],
        scope=values["scope"],
        condition=condition,
        may_be_relaxed=bool(values["may_be_relaxed"]),
        reason=values["reason"],
        id=values["id"],
        group=values.get("group") or "",
    )


_FIELD_OF_PROBLEM = {
    "tool": "tool",
    "verdict": "verdict",
    "scope": "scope",
    "condition": "condition_kind",
    "pointer": "condition_pointer",
    "op": "condition_op",
}


class PolicyRule(models.Model):
    """One rule (docs/policy.md). Condition entries (command patterns, path globs, host
    names) are one per line in ``condition_values``; a pointer condition uses
    ``condition_pointer``, ``condition_op`` and ``condition_value``."""

    class Scope(models.TextChoices):
        ORG = "org", "organisation"
        GROUP = "group", "group"
        USER = "user", "user"

    class Verdict(models.TextChoices):
        ALLOW = "allow", "allow"
        ASK = "ask", "ask"
        DENY = "deny", "deny"

    class ConditionKind(models.TextChoices):
        NONE = "", "no condition"
        COMMAND = "command", "bash command"
        PATH = "path", "path globs (file tools)"
        HOST = "host", "host names (web_fetch)"
        POINTER = "pointer", "argument at a JSON pointer"

    class Op(models.TextChoices):
        EQUALS = "equals", "equals (JSON value)"
        MATCHES = "matches", "matches (RE2 regex)"

    scope = models.CharField(max_length=8, choices=Scope.choices, default=Scope.ORG)
    group = models.ForeignKey(
        "auth.Group", null=True, blank=True, on_delete=models.CASCADE, related_name="policy_rules"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="policy_rules",
    )
    tool = models.CharField(
        max_length=255, help_text="A tool name or a glob, e.g. bash or mcp__github__*."
    )
    verdict = models.CharField(max_length=8, choices=Verdict.choices)
    condition_kind = models.CharField(
        "condition", max_length=16, choices=ConditionKind.choices, blank=True, default=""
    )
    condition_values = models.TextField(
        "condition entries",
        blank=True,
        default="",
        help_text="One per line: command patterns (git status*), path globs (docs/**) or "
        "host names (example.com, *.example.com).",
    )
    condition_pointer = models.CharField(
        "JSON pointer", max_length=255, blank=True, default="", help_text="e.g. /opts/force"
    )
    condition_op = models.CharField(
        "comparison", max_length=8, choices=Op.choices, default=Op.EQUALS, blank=True
    )
    condition_value = models.TextField(
        "value", blank=True, default="", help_text='A JSON value (true, "prod") or a regex.'
    )
    condition_negate = models.BooleanField(
        "negate", default=False, help_text="Match when the condition does NOT hold."
    )
    may_be_relaxed = models.BooleanField(
        default=False, help_text="A narrower scope may give a less restrictive verdict."
    )
    reason = models.CharField(max_length=500, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(
                condition=(
                    Q(scope="org", group__isnull=True, user__isnull=True)
                    | Q(scope="group", group__isnull=False, user__isnull=True)
                    | Q(scope="user", group__isnull=True, user__isnull=False)
                ),
                name="policy_rule_scope_owner",
            )
        ]
        indexes = [models.Index(fields=["scope"])]

    def __str__(self) -> str:
        return self.as_rule().words()

    def as_rule(self) -> Rule:
        return rule_from_values(
            id=self.pk,
            scope=self.scope,
            group=self.group.name if self.group_id and self.group else "",
            tool=self.tool,
            verdict=self.verdict,
            condition_kind=self.condition_kind,
            condition_values=self.condition_values,
            condition_pointer=self.condition_pointer,
            condition_op=self.condition_op,
            condition_value=self.condition_value,
            condition_negate=self.condition_negate,
            may_be_relaxed=self.may_be_relaxed,
            reason=self.reason,
        )

    def clean(self) -> None:
        """Every problem the framework finds, each on its own field; nothing half-saved."""
        errors: dict[str, str] = {}
        if self.scope == self.Scope.GROUP and self.group_id is None:
            errors["group"] = "a group rule needs a group"
        if self.scope != self.Scope.GROUP and self.group_id is not None:
            errors["group"] = "only a group rule names a group"
        if self.scope == self.Scope.USER and self.user_id is None:
            errors["user"] = "a user rule needs a user"
        if self.scope != self.Scope.USER and self.user_id is not None:
            errors["user"] = "only a user rule names a user"
        for field, message in rule_problems(self.as_rule()).items():
            if field == "value":
                pointer = self.condition_kind == self.ConditionKind.POINTER
                errors["condition_value" if pointer else "condition_values"] = message
            else:
                errors[_FIELD_OF_PROBLEM.get(field, "condition_kind")] = message
        if errors:
            raise ValidationError(errors)


class AlwaysAskMark(models.Model):
    """A tool (name or glob) that always asks: no rule, grant or saved allow relaxes it."""

    tool = models.CharField(max_length=255, unique=True, help_text="A tool name or a glob.")
    reason = models.CharField(max_length=500, blank=True, default="")

    class Meta:
        ordering = ["tool"]
        verbose_name = "always-ask mark"

    def __str__(self) -> str:
        return f"always ask {self.tool}"

    def clean(self) -> None:
        problem = rule_problems(Rule(tool=self.tool.strip(), verdict="ask")).get("tool")
        if problem:
            raise ValidationError({"tool": problem})


class PolicySettings(models.Model):
    """The organisation's policy switches; a single row."""

    deny_by_default = models.BooleanField(
        default=False,
        help_text="Deny every tool no rule allows (rules may then allow exceptions).",
    )

    class Meta:
        verbose_name = "policy settings"
        verbose_name_plural = "policy settings"

    def save(self, *args, **kwargs) -> None:
        self.pk = 1
        super().save(*args, **kwargs)

    def __str__(self) -> str:
        return "deny by default" if self.deny_by_default else "tools' own defaults"
