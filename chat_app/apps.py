from django.apps import AppConfig


class ChatAppConfig(AppConfig):
    name = "chat_app"
    verbose_name = "Chat"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from chat_app.startup import runs_close_left_running
        from openprogram_site.startup import server_starting

        server_starting.connect(runs_close_left_running, dispatch_uid="chat_app.close_runs")
