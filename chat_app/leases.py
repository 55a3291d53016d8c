"""Keeping a running turn's lease: proof, to every other process, that its server is alive.

A run marked running says nothing about whether anyone still runs it; with several
daphne processes only the process that runs it knows. So that process renews
``Run.lease_until`` every third of ``CHAT_RUN_LEASE_SECONDS`` (one UPDATE), and
anyone who finds a running run with an expired lease closes it as orphaned
(``chat_app.turn_store.run_expire_orphans``). Two renewals may fail or be late before
the lease runs out.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from django.conf import settings

from chat_app import turn_store

__all__ = ["lease_keep"]

_log = logging.getLogger(__name__)


async def lease_keep(*, run_id: int, on_lost: Callable[[], None]) -> None:
    """Renew ``run_id``'s lease until cancelled; call ``on_lost`` if the run was closed.

    The run is closed under us when this process stalled past its lease and another
    closed it as orphaned: the turn must then stop, not carry on unseen.
    """
    interval = settings.CHAT_RUN_LEASE_SECONDS / 3
    while True:
        await asyncio.sleep(interval)
        try:
            renewed = await turn_store.renew_lease(run_id=run_id)
        except Exception:
            # A database hiccup is retried next beat; the lease has two beats to spare.
            _log.exception("could not renew the lease of run %r", run_id)
            continue
        if not renewed:
            _log.warning("run %r was closed as orphaned; stopping its turn", run_id)
            on_lost()
            return
