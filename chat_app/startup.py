"""The chat app's part of start-up: runs a crashed server left marked running are closed."""

from __future__ import annotations

import logging

from django.db import DatabaseError

from chat_app.services import runs_close_at_startup
from chat_app.turns import single_process_layer

logger = logging.getLogger(__name__)

__all__ = ["runs_close_left_running"]


def runs_close_left_running(**_signal: object) -> None:
    """Close them now, not when someone looks; a database not yet migrated has none."""
    try:
        closed = runs_close_at_startup(single_process=single_process_layer())
    except DatabaseError:
        logger.info("run table not ready; no leftover runs to close")
        return
    if closed:
        logger.warning("closed %d run(s) left running by a server that stopped", closed)
