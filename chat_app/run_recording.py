"""A run's recorded events: history rows, the run's summary and tool-call rows, the ledger.

Every event a turn emits is appended here (in order, each with its ``seq``), and the
rows that summarise it (the run's resolved tools, a tool call's status and result) are
kept in step, in one transaction; on PostgreSQL in one round trip.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction

from audit_app.recording import audit_events_record
from chat_app.db_batch import statements_pipelined
from chat_app.explain import explain_compact
from chat_app.history_sql import (
    ledger_rollback,
    ledger_savepoint,
    model_calls_insert,
    run_events_insert,
    tool_call_close,
    tool_call_open,
)
from chat_app.models import Run
from chat_app.turn_sql import row_update, run_conversation_todos_set, tool_call_status_set

__all__ = ["run_record_events"]

_log = logging.getLogger(__name__)


def _apply_event(run_id: int, event: dict[str, Any]) -> None:
    """Keep the run's summary and tool-call rows in step with one event.

    Written by run id, without loading the run: most events touch only their own rows.
    Plain SQL (``chat_app.turn_sql``): the ORM's compilation of these updates was most
    of the CPU of writing a turn's history.
    """
    kind = event["type"]
    if kind == "tools_resolved":
        tools, deferred = event.get("tools", []), event.get("deferred", [])
        summary: dict[str, Any] = {
            "tools": tools,
            "deferred": deferred,
            "explain": explain_compact(event.get("explain", []), tools=tools, deferred=deferred),
            "warnings": event.get("warnings", []),
        }
        if event.get("model"):
            summary["model"] = event["model"]
        row_update(Run, pk=run_id, values=summary)
    elif kind == "tool_call_started":
        arguments = event.get("arguments")
        # One upsert (the same call may be announced again, e.g. by a nested run).
        tool_call_open(
            run_id=run_id,
            call_id=event["call_id"],
            name=event["name"],
            arguments=arguments if arguments is not None else {},
            parent_call_id=event.get("parent_call_id") or "",
        )
    elif kind == "approval_requested":
        tool_call_status_set(run_id=run_id, call_id=event["call_id"], status="awaiting_approval")
    elif kind == "approval_resolved":
        status = "running" if event.get("approved") else "denied"
        tool_call_status_set(run_id=run_id, call_id=event["call_id"], status=status)
    elif kind == "tool_finished":
        _tool_call_finish(run_id, event)
    elif kind == "todo_updated":
        run_conversation_todos_set(run_id=run_id, todos=event.get("todos", []))
    elif kind == "error":
        row_update(Run, pk=run_id, values={"error": event.get("message", "")})


def _tool_call_finish(run_id: int, event: dict[str, Any]) -> None:
    """Close a call's row with its result in one upsert; a denied call stays denied."""
    is_error = bool(event.get("is_error"))
    result = {
        "result_preview": event.get("preview", ""),
        "is_error": is_error,
        "truncated": bool(event.get("truncated")),
        "full_result_path": event.get("full_result_path") or "",
        "duration_ms": float(event.get("duration_ms") or 0.0),
    }
    # Cut off by Stop: shown as stopped, not as a failure of the tool.
    status = "stopped" if event.get("stopped") else "error" if is_error else "done"
    # A call never announced (refused before it started) gets its row here.
    tool_call_close(
        run_id=run_id,
        call_id=event["call_id"],
        name=event.get("name", ""),
        status=status,
        result=result,
    )


_ON_THE_RUN = ("tools", "deferred", "explain")
"""tools_resolved fields the Run itself stores; the event row would only repeat them."""


def _event_payload(event: dict[str, Any]) -> dict[str, Any]:
    dropped = {"seq", "type", "run_id"}
    if event["type"] == "tools_resolved":
        dropped.update(_ON_THE_RUN)
    return {k: v for k, v in event.items() if k not in dropped}


def run_record_events(
    *, run_id: int, events: list[dict[str, Any]], owner_id: int | None = None
) -> None:
    """Append events (each carrying its ``seq``) to run history, in one transaction.

    ``owner_id``: also write a ledger row (``usage_app.models.ModelCall``) for each
    ``model_call`` event, under a savepoint of its own: the ledger must not take the
    turn's history down (the run keeps the totals), so rows the database refuses are
    logged and left out. On PostgreSQL all of it is one round trip (pipelined).
    """
    if not events:
        return
    from usage_app.services import model_call_fields

    calls = [model_call_fields(e) for e in events if e["type"] == "model_call"]
    savepoint = ledger_savepoint()
    # Inside a batch (chat_app.db_batch) the batch's transaction covers it: no savepoint.
    with transaction.atomic(savepoint=False):
        try:
            with statements_pipelined():
                run_events_insert(
                    run_id=run_id,
                    events=[(e["seq"], e["type"], _event_payload(e)) for e in events],
                )
                for event in events:
                    _apply_event(run_id, event)
                # The audit trail's rows for the calls that finished in this step.
                audit_events_record(run_id=run_id, owner_id=owner_id, events=events, run_model=Run)
                if calls and owner_id is not None:
                    model_calls_insert(
                        user_id=owner_id, run_id=run_id, calls=calls, savepoint=savepoint
                    )
        except Exception:
            if not ledger_rollback(savepoint):
                raise
            _log.exception("could not record the model calls of run %r", run_id)
