"""``manage.py sandbox_check``: which sandbox limits are in force on this host, and why not."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from openprogram.config import get_config
from openprogram.security.confinement import sandbox_status


class Command(BaseCommand):
    help = "Say which limits the shell sandbox enforces here, and why any are missing."

    def handle(self, *args: Any, **options: Any) -> None:
        from tools_app.startup import framework_configure

        framework_configure()
        config = get_config()
        rows = sandbox_status(config.sandbox_limits, bwrap=config.bwrap)
        width = max(len(name) for name, _, _ in rows)
        for name, value, how in rows:
            self.stdout.write(f"{name:<{width}}  {value:<8}  {how}")
