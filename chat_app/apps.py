from django.apps import AppConfig

from core.signals import server_starting


class ChatAppConfig(AppConfig):
    name = "chat_app"
    verbose_name = "Chat"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # In ready(): chat_app.startup imports the models, which the app registry must
        # have loaded first.
        from chat_app.startup import model_checks_warm, runs_close_left_running

        server_starting.connect(runs_close_left_running, dispatch_uid="chat_app.close_runs")
        server_starting.connect(model_checks_warm, dispatch_uid="chat_app.model_checks")
