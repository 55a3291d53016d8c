from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_initial"),
    ]

    operations = [
        migrations.CreateModel(
            name="LoginFailure",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("username", models.CharField(max_length=150)),
                ("address", models.CharField(max_length=64)),
                ("at", models.DateTimeField(auto_now_add=True)),
            ],
            options={
                "indexes": [
                    models.Index(fields=["username", "at"], name="accounts_lo_usernam_a1dd61_idx"),
                    models.Index(fields=["address", "at"], name="accounts_lo_address_1c1f03_idx"),
                ],
            },
        ),
    ]
