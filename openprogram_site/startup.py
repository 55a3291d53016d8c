"""What the server does once at start-up, after Django is ready."""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)

__all__ = ["start_background_services"]


def start_background_services() -> None:
    """Configure the framework from settings. Nothing here may block start-up."""
    from django.conf import settings

    from openprogram import config

    config.configure(
        home=settings.OPENPROGRAM_HOME,
        results_dir=settings.RESULTS_DIR,
    )
