from django.apps import AppConfig


class ToolsAppConfig(AppConfig):
    name = "tools_app"
    verbose_name = "Tools"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from openprogram_site.startup import server_starting
        from tools_app.startup import tools_start

        server_starting.connect(tools_start, dispatch_uid="tools_app.start")
