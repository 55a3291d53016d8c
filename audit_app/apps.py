from django.apps import AppConfig


class AuditAppConfig(AppConfig):
    name = "audit_app"
    verbose_name = "Audit trail"
    default_auto_field = "django.db.models.BigAutoField"
