"""``manage.py audit_prune``: the only way rows leave the audit trail."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from audit_app.services import audit_prune


class Command(BaseCommand):
    help = (
        "Delete audit-trail rows older than OPENPROGRAM_AUDIT_RETENTION_DAYS "
        "(or --days); 0 keeps everything."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--days", type=int, default=None)

    def handle(self, *args: Any, days: int | None = None, **options: Any) -> None:
        keep = settings.OPENPROGRAM_AUDIT_RETENTION_DAYS if days is None else days
        if keep < 0:
            raise CommandError("--days must be 0 or more")
        if keep == 0:
            self.stdout.write("retention is 0 (keep everything): nothing deleted")
            return
        deleted = audit_prune(older_than_days=keep)
        self.stdout.write(f"deleted {deleted} audit rows older than {keep} days")
