"""What the server does once at start-up, after Django is ready.

The site imports no app for this: each app's ``AppConfig.ready`` connects its own
start-up work to ``core.signals.server_starting``, and the ASGI entry point sends it once. It is
a signal rather than work done in ``ready`` itself because ``ready`` also runs for
``migrate`` and every other management command, where connecting MCP servers or
closing runs would be wrong.
"""

from __future__ import annotations

import logging

from core.signals import server_starting
from openprogram_site.data_dir import data_dir_warn

logger = logging.getLogger(__name__)

__all__ = ["start_background_services"]


def start_background_services() -> None:
    """Warn about a data directory others can reach, then run every app's start-up work;
    one that fails is logged, the others still run."""
    data_dir_warn()
    for receiver, outcome in server_starting.send_robust(sender=None):
        if isinstance(outcome, Exception):
            logger.error(
                "start-up step %s failed: %s",
                getattr(receiver, "__qualname__", receiver),
                outcome,
                exc_info=outcome,
            )
