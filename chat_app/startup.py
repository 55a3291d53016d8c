"""The chat app's part of start-up: runs a crashed server left marked running are closed,
and the configured real models' key checks are warmed in the background."""

from __future__ import annotations

import logging
import threading

from django.conf import settings
from django.db import DatabaseError

from chat_app.selectors import model_checks_pending_mark, model_checks_run
from chat_app.turn_store import runs_close_at_startup
from chat_app.turns import single_process_layer

logger = logging.getLogger(__name__)

__all__ = ["model_checks_warm", "runs_close_left_running"]


def runs_close_left_running(**_signal: object) -> None:
    """Close them now, not when someone looks; a database not yet migrated has none."""
    try:
        closed = runs_close_at_startup(single_process=single_process_layer())
    except DatabaseError:
        logger.info("run table not ready; no leftover runs to close")
        return
    if closed:
        logger.warning("closed %d run(s) left running by a server that stopped", closed)


def model_checks_warm(**_signal: object) -> None:
    """Run the key checks of the configured real models on a thread of their own now.

    The check imports litellm (~5 s, far more on a busy machine); left to the first page
    that lists the models, it stalls that person's sign-in, and a page shown while this
    thread imports it would wait for the import too, so until the checks are done pages
    show no key problem (``chat_app.selectors.model_choices``). With only the offline
    model configured nothing is imported.
    """
    if all(model == "offline" for model in settings.OPENPROGRAM_MODELS):
        return
    model_checks_pending_mark()
    threading.Thread(target=model_checks_run, name="openprogram-model-checks", daemon=True).start()
