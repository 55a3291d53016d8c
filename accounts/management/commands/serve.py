import os
import signal
import sys

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Migrate, print a one-time admin login link, and serve HTTP + WebSocket with daphne."

    def add_arguments(self, parser):
        parser.add_argument("--host", default=settings.HOST)
        parser.add_argument("--port", type=int, default=settings.PORT)

    def handle(self, *args, host: str, port: int, **options):
        call_command("migrate", interactive=False, verbosity=0)
        self.stdout.write("OpenProgram is starting. Open this one-time login link:\n")
        call_command("login_link", host=host, port=port)
        self.stdout.write(f"\nServing on http://{host}:{port}/  (Ctrl-C stops)\n")
        sys.stdout.flush()
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "openprogram_site.settings")
        # The served process reads its allowed hosts and exact origins (CSRF, sockets) from
        # HOST and PORT: the ones given here, or a chat page served on --port 9000 would
        # have every socket refused as a foreign origin.
        os.environ["HOST"] = host
        os.environ["PORT"] = str(port)
        # X-Forwarded-For is believed only when a proxy is known to set it.
        proxy = ["--proxy-headers"] if settings.TRUST_PROXY_HEADERS else []
        # Ctrl-C stops the server, whatever this process inherited: an ignored SIGINT (a
        # shell's background job, a test runner's worker) stays ignored across exec, and
        # daphne's reactor then never sees it; a blocked one stays blocked.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        # `python -m daphne`: the interpreter's own daphne, wherever its scripts were installed.
        os.execv(
            sys.executable,
            [
                sys.executable,
                "-m",
                "daphne",
                "-b",
                host,
                "-p",
                str(port),
                *proxy,
                settings.ASGI_APPLICATION.replace(".application", ":application"),
            ],
        )
