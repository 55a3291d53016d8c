"""How many turns one user may start: per minute, and running at once.

Every turn (socket, API, any process) opens its run through ``services.run_start``,
which calls :func:`turn_start_allow` inside its transaction with the user's row
locked, so the count is exact across processes: the database is the truth, and two
daphne processes cannot both let the 31st turn of a minute through. A refusal raises
:class:`~openprogram_site.api_errors.ThrottledError`: HTTP 429 from the API, an
error frame of kind ``throttled`` on the socket. Nothing queues: the client retries
after the time the message names.
"""

from __future__ import annotations

import math
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils import timezone

from chat_app.models import Run
from openprogram_site.api_errors import ThrottledError

__all__ = ["TURN_WINDOW", "turn_start_allow"]

TURN_WINDOW = timedelta(minutes=1)


def turn_start_allow(*, owner_id: int) -> None:
    """Raise ThrottledError if ``owner_id`` may not start another turn now.

    Call inside a transaction: the owner's row is locked (PostgreSQL) or the whole
    database is (SQLite's immediate transactions), so the count cannot go stale
    before the run is created. A limit of 0 turns that check off.
    """
    per_minute = settings.OPENPROGRAM_TURNS_PER_MINUTE
    concurrent = settings.OPENPROGRAM_MAX_CONCURRENT_TURNS
    if not per_minute and not concurrent:
        return
    get_user_model().objects.select_for_update().filter(pk=owner_id).values_list("pk").first()
    now = timezone.now()
    runs = Run.objects.filter(conversation__owner_id=owner_id)
    if concurrent:
        # A run whose lease ran out belongs to a dead server; it holds no slot.
        running = runs.filter(status="running", lease_until__gt=now)
        if running.count() >= concurrent:
            raise ThrottledError(
                f"too many turns running: {concurrent} at once is the limit; "
                "wait for one to finish or stop it",
                retry_after=None,
            )
    if per_minute:
        recent = list(
            runs.filter(started__gt=now - TURN_WINDOW)
            .order_by("-started")
            .values_list("started", flat=True)[:per_minute]
        )
        if len(recent) >= per_minute:
            wait = math.ceil((recent[-1] + TURN_WINDOW - now).total_seconds())
            raise ThrottledError(
                f"too many turns: {per_minute} a minute is the limit; "
                f"try again in {max(wait, 1)} s",
                retry_after=max(wait, 1),
            )
