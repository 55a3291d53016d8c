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
        workspaces_dir=settings.WORKSPACES_DIR,
        workspace=settings.OPENPROGRAM_WORKSPACE or None,
        allow_shell=settings.OPENPROGRAM_ALLOW_SHELL,
        searxng_url=settings.SEARXNG_URL,
        search_api_key=settings.SEARCH_API_KEY,
        web_fetch_allow_hosts=tuple(settings.WEB_FETCH_ALLOW_HOSTS),
        web_fetch_max_bytes=settings.WEB_FETCH_MAX_BYTES,
        web_fetch_timeout=float(settings.WEB_FETCH_TIMEOUT_SECONDS),
        sandbox_network=settings.OPENPROGRAM_SANDBOX_NETWORK,
        shell_staff_only=settings.OPENPROGRAM_SHELL_STAFF_ONLY,
        bwrap=settings.OPENPROGRAM_BWRAP,
    )
    from openprogram.programs.loader import load_program_packages

    load_program_packages(settings.OPENPROGRAM_PACKAGES)  # logs failures, never raises
    _close_runs_left_running()
    from tools_app.catalog_sync import tool_catalog_sync_at_startup

    tool_catalog_sync_at_startup()  # logs a missing table, never raises
    from tools_app.mcp_services import mcp_servers_start

    mcp_servers_start()  # connects in the background; atexit closes every server


def _close_runs_left_running() -> None:
    """Runs a crashed server left marked running are closed now, not when someone looks."""
    from django.db import DatabaseError

    from chat_app.services import runs_close_at_startup
    from chat_app.turns import single_process_layer

    try:
        closed = runs_close_at_startup(single_process=single_process_layer())
    except DatabaseError:  # not migrated yet: nothing can be running
        logger.info("run table not ready; no leftover runs to close")
        return
    if closed:
        logger.warning("closed %d run(s) left running by a server that stopped", closed)
