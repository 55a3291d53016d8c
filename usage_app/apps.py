from django.apps import AppConfig
from django.conf import settings

from openprogram.providers.pricing import set_price_overrides


class UsageAppConfig(AppConfig):
    name = "usage_app"
    verbose_name = "Usage and budgets"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Parsed and validated at settings load (openprogram_site/env.py).
        set_price_overrides(settings.OPENPROGRAM_MODEL_PRICES)
