from django.conf import settings
from django.core.management.base import BaseCommand

from accounts.services import admin_ensure, login_token_create


class Command(BaseCommand):
    help = "Make sure an administrator exists and print a one-time login link."

    def add_arguments(self, parser):
        parser.add_argument("--host", default=settings.HOST)
        parser.add_argument("--port", type=int, default=settings.PORT)

    def handle(self, *args, host: str, port: int, **options):
        user = admin_ensure()
        token = login_token_create(user=user)
        shown = "127.0.0.1" if host in {"0.0.0.0", "::"} else host
        self.stdout.write(f"http://{shown}:{port}/login/token/{token}/")
