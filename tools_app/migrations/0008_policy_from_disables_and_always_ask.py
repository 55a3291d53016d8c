"""Existing global disables become organisation deny rules (with their reasons; the
tool's switch is cleared, so the rule is the one place it is denied), and
``OPENPROGRAM_ALWAYS_ASK_TOOLS`` seeds "always ask" marks (docs/policy.md)."""

from __future__ import annotations

from django.conf import settings
from django.db import migrations


def forwards(apps, schema_editor):
    Tool = apps.get_model("tools_app", "Tool")
    PolicyRule = apps.get_model("tools_app", "PolicyRule")
    AlwaysAskMark = apps.get_model("tools_app", "AlwaysAskMark")
    for tool in Tool.objects.filter(disabled=True):
        PolicyRule.objects.get_or_create(
            scope="org",
            tool=tool.name,
            verdict="deny",
            condition_kind="",
            defaults={
                "reason": tool.disabled_reason or "disabled for everyone",
                "created_by_id": tool.disabled_by_id,
            },
        )
    Tool.objects.filter(disabled=True).update(
        disabled=False, disabled_reason="", disabled_by=None, disabled_at=None
    )
    for name in sorted(getattr(settings, "CHAT_ALWAYS_ASK_TOOLS", ()) or ()):
        AlwaysAskMark.objects.get_or_create(
            tool=name, defaults={"reason": "from OPENPROGRAM_ALWAYS_ASK_TOOLS"}
        )


class Migration(migrations.Migration):
    dependencies = [("tools_app", "0007_team_policy")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
