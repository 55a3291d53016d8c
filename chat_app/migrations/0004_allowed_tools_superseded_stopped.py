"""Per-conversation tool grants, runs replaced by an edit/regeneration, a "stopped" call."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("chat_app", "0003_conversation_public_id"),
    ]

    operations = [
        migrations.AddField(
            model_name="conversation",
            name="allowed_tools",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name="run",
            name="superseded",
            field=models.BooleanField(default=False),
        ),
        migrations.AlterField(
            model_name="toolcallrecord",
            name="status",
            field=models.CharField(
                choices=[
                    ("running", "running"),
                    ("awaiting_approval", "awaiting_approval"),
                    ("done", "done"),
                    ("error", "error"),
                    ("denied", "denied"),
                    ("stopped", "stopped"),
                ],
                default="running",
                max_length=24,
            ),
        ),
    ]
