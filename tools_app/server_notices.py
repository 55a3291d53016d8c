"""Notices for the Programs page: MCP servers that failed, tool definitions that changed.

The statuses come from the MCP engineer's ``mcp_server_statuses`` selector; this
module only words them. A failing status lookup must never take the page down.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal

from tools_app.mcp.selectors import mcp_server_statuses

__all__ = ["Notice", "server_notices"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Notice:
    level: Literal["warn", "danger"]
    message: str


def server_notices() -> list[Notice]:
    try:
        statuses = mcp_server_statuses()
    except Exception:  # the page still works without MCP status
        logger.exception("could not read MCP server statuses")
        return [Notice("warn", "MCP server status is unavailable right now.")]
    notices: list[Notice] = []
    for name, status in sorted(statuses.items()):
        if status.get("state") == "failed":
            error = status.get("error") or "unknown error"
            notices.append(
                Notice(
                    "danger",
                    f"MCP server {name!r} failed: {error}. Its tools are unavailable "
                    f"until it recovers (retry {status.get('retries', 0)}).",
                )
            )
        changed = status.get("changed_tools") or []
        if changed:
            notices.append(
                Notice(
                    "warn",
                    f"MCP server {name!r} changed the definition of "
                    f"{', '.join(map(repr, changed))} since it was approved; "
                    "review and re-approve it in the admin.",
                )
            )
    return notices
