"""Keep the ``Tool`` catalog table in step with the framework registry.

The registry is the truth about what exists in this process (built-ins, plugins,
Agent methods, MCP servers as they connect). The table adds what must outlive a
process: the global disable, and the memory of tools that were seen once and are
gone now (``present=False``), so profiles naming them can show them as missing.

``tool_catalog_sync`` runs at start-up; ``tool_catalog_sync_if_changed`` runs on
every Programs page and API request and costs one integer comparison when the
registry has not changed since the last sync.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from django.db import DatabaseError, transaction
from django.utils import timezone

from openprogram.agent.types import AgentTool
from openprogram.programs import registry  # importing the package registers the built-ins
from tools_app.models import Tool

__all__ = [
    "MIRRORED_FIELDS",
    "tool_catalog_mark_stale",
    "tool_catalog_sync",
    "tool_catalog_sync_at_startup",
    "tool_catalog_sync_if_changed",
]

logger = logging.getLogger(__name__)

MIRRORED_FIELDS = (
    "label",
    "description",
    "source",
    "server",
    "package",
    "toolsets",
    "deferred",
    "requires_approval",
    "exposed",
    "hints",
    "parameters",
)
_lock = threading.Lock()
_synced_version: int | None = None


def _mirror(tool: AgentTool) -> dict[str, Any]:
    return {
        "label": tool.label or "",
        "description": tool.description or "",
        "source": tool.source,
        "server": tool.server or "",
        "package": tool.package or "",
        "toolsets": sorted(tool.toolsets),
        "deferred": bool(tool.defer),
        # A callable means "sometimes": the catalog shows that approval may be asked.
        "requires_approval": bool(tool.requires_approval),
        "exposed": bool(tool.expose),
        # MCP annotations, as read by openprogram.mcp.tool (hints only ever restrict).
        "hints": {k: bool(v) for k, v in (getattr(tool, "hints", None) or {}).items()},
        "parameters": tool.parameters or {},
    }


def tool_catalog_sync() -> dict[str, int]:
    """Mirror the registry into ``Tool`` rows; return counts of what changed.

    New tools are inserted, changed ones updated, vanished ones marked not present.
    Global disables are never touched here.
    """
    global _synced_version
    with _lock:
        version = registry.registry_version()
        tools = {tool.name: tool for tool in registry.all_tools()}
        now = timezone.now()
        with transaction.atomic():
            existing = {row.name: row for row in Tool.objects.all()}
            created = [
                Tool(name=name, present=True, last_seen=now, **_mirror(tool))
                for name, tool in tools.items()
                if name not in existing
            ]
            changed: list[Tool] = []
            for name, row in existing.items():
                tool = tools.get(name)
                if tool is None:
                    if row.present:
                        row.present = False
                        changed.append(row)
                    continue
                for field, value in _mirror(tool).items():
                    setattr(row, field, value)
                row.present = True
                row.last_seen = now
                changed.append(row)
            # ignore_conflicts: another process may insert the same new tool concurrently.
            Tool.objects.bulk_create(created, ignore_conflicts=True)
            Tool.objects.bulk_update(changed, [*MIRRORED_FIELDS, "present", "last_seen"])
        _synced_version = version
    gone = sum(1 for row in changed if not row.present)
    return {"created": len(created), "updated": len(changed) - gone, "gone": gone}


def tool_catalog_sync_if_changed() -> bool:
    """Sync when the registry changed since the last sync; True when a sync ran."""
    if _synced_version == registry.registry_version():
        return False
    tool_catalog_sync()
    return True


def tool_catalog_sync_at_startup() -> None:
    """The start-up sync: a missing table (not migrated yet) is logged, never fatal."""
    try:
        counts = tool_catalog_sync()
    except DatabaseError as exc:
        logger.warning("tool catalog not synced at start-up: %s", exc)
        return
    logger.info("tool catalog synced: %s", counts)


def tool_catalog_mark_stale() -> None:
    """Force the next ``tool_catalog_sync_if_changed`` to sync (e.g. after a test rollback)."""
    global _synced_version
    _synced_version = None
