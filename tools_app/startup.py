"""The tools app's part of start-up: configure the framework, then load, sync and connect."""

from __future__ import annotations

from django.conf import settings

from openprogram import config
from openprogram.programs.loader import load_program_packages
from openprogram.security.confinement import sandbox_report
from openprogram.security.sandbox_limits import SandboxLimits
from tools_app.catalog_sync import tool_catalog_sync_at_startup
from tools_app.mcp.services import mcp_servers_start

__all__ = ["tools_start"]


def framework_configure() -> None:
    """Hand the deployment's settings to the framework (no I/O)."""
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
        sandbox_limits=sandbox_limits_from_settings(),
        workspace_quota_bytes=settings.OPENPROGRAM_WORKSPACE_QUOTA_BYTES,
        sandbox_uid=settings.OPENPROGRAM_SANDBOX_UID,
        sandbox_gid=settings.OPENPROGRAM_SANDBOX_GID,
        sandbox_pool=settings.OPENPROGRAM_SANDBOX_POOL,
    )


def sandbox_limits_from_settings() -> SandboxLimits:
    mib = 1 << 20
    return SandboxLimits(
        memory_bytes=settings.OPENPROGRAM_SANDBOX_MEMORY_MB * mib,
        cpu_seconds=settings.OPENPROGRAM_SANDBOX_CPU_SECONDS,
        processes=settings.OPENPROGRAM_SANDBOX_PROCESSES,
        file_bytes=settings.OPENPROGRAM_SANDBOX_FILE_MB * mib,
        tmp_bytes=settings.OPENPROGRAM_SANDBOX_TMP_MB * mib,
    )


def tools_start(**_signal: object) -> None:
    """Configure the framework, load program packages, sync the catalog, connect MCP servers.

    None of it blocks start-up.
    """
    framework_configure()
    sandbox_report()  # one log line: which limits are in force here, and why any are not
    load_program_packages(settings.OPENPROGRAM_PACKAGES)  # logs failures, never raises
    tool_catalog_sync_at_startup()  # logs a missing table, never raises
    mcp_servers_start()  # connects in the background; atexit closes every server
