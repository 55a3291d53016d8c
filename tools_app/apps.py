from django.apps import AppConfig

from core.signals import server_starting


class ToolsAppConfig(AppConfig):
    name = "tools_app"
    verbose_name = "Tools"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # In ready(): tools_app.startup imports the models, which the app registry must
        # have loaded first.
        from tools_app.startup import tools_start

        server_starting.connect(tools_start, dispatch_uid="tools_app.start")
