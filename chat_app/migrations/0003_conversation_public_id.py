"""Conversations get a random public id (URLs, API, socket); existing rows get one each."""

import uuid

from django.db import migrations, models


def _fill(apps, schema_editor):
    Conversation = apps.get_model("chat_app", "Conversation")
    for conversation in Conversation.objects.filter(public_id__isnull=True).only("pk"):
        conversation.public_id = uuid.uuid4()
        conversation.save(update_fields=["public_id"])


class Migration(migrations.Migration):
    dependencies = [
        ("chat_app", "0002_run_lease_compact_explain"),
    ]

    operations = [
        migrations.AddField(
            model_name="conversation",
            name="public_id",
            field=models.UUIDField(null=True, editable=False),
        ),
        migrations.RunPython(_fill, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="conversation",
            name="public_id",
            field=models.UUIDField(default=uuid.uuid4, unique=True, editable=False),
        ),
    ]
