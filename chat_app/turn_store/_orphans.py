"""Runs whose server is gone: closed as orphaned, keeping what they had streamed.

A run marked running says nothing about whether anyone still runs it; with several
daphne processes only the process that runs it knows. That process renews the run's
lease (``chat_app.leases``); whoever finds a running run whose lease lapsed (or, with
one process, one that nothing in this process runs) closes it here.
"""

from __future__ import annotations

from django.db.models import Q, QuerySet
from django.utils import timezone

from chat_app.models import Run, RunEvent
from chat_app.turn_store._history import run_close

__all__ = [
    "ORPHANED_RUN_ERROR",
    "close_run_ids",
    "run_abandon_orphans",
    "run_expire_orphans",
    "runs_close_at_startup",
]

ORPHANED_RUN_ERROR = "the server running this turn stopped"


def run_expire_orphans(*, conversation_id: int, reason: str = ORPHANED_RUN_ERROR) -> int:
    """Close the conversation's running runs whose lease ran out: their server is gone.

    Cheap when nothing is orphaned (one indexed query), so every touch of a
    conversation (a message, a page load, a socket's catch-up) may call it.
    """
    running = Run.objects.filter(conversation_id=conversation_id, status="running")
    return _close_runs(_lease_lapsed(running), reason=reason)


def run_abandon_orphans(*, conversation_id: int, reason: str = ORPHANED_RUN_ERROR) -> int:
    """Close runs marked running that no process owns any more (single-process layer)."""
    running = Run.objects.filter(conversation_id=conversation_id, status="running")
    return _close_runs(running, reason=reason)


def runs_close_at_startup(*, single_process: bool) -> int:
    """Close the runs a previous server left marked running; returns how many.

    With one process (the in-memory channel layer) nobody else can be running a turn, so
    every running run is a leftover; with several, only those whose lease lapsed are.
    """
    running = Run.objects.filter(status="running")
    return _close_runs(
        running if single_process else _lease_lapsed(running), reason=ORPHANED_RUN_ERROR
    )


def _lease_lapsed(runs: QuerySet[Run]) -> QuerySet[Run]:
    return runs.filter(Q(lease_until__lt=timezone.now()) | Q(lease_until__isnull=True))


def _close_runs(runs: QuerySet[Run], *, reason: str) -> int:
    return close_run_ids(list(runs.values_list("pk", flat=True)), reason=reason)


def close_run_ids(run_ids: list[int], *, reason: str) -> int:
    """Close runs as errors with ``reason``, keeping the text each had streamed (as a
    Stop would keep it)."""
    for run_id in run_ids:
        run_close(run_id=run_id, status="error", text=_partial_text(run_id), error=reason)
    return len(run_ids)


def _partial_text(run_id: int) -> str:
    deltas = RunEvent.objects.filter(run_id=run_id, type="text_delta").order_by("seq")
    return "".join(
        str(payload.get("text", "")) for payload in deltas.values_list("payload", flat=True)
    )
