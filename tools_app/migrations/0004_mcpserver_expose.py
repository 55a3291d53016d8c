from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("tools_app", "0003_mcp_oauth_accounts"),
    ]

    operations = [
        migrations.AddField(
            model_name="mcpserver",
            name="expose",
            field=models.BooleanField(
                default=True,
                help_text="Offer this server's tools to models. Off: they stay registered "
                "(catalog, scripts) but no model is ever offered them.",
            ),
        ),
    ]
