"""Recording the audit trail from a turn's events: one row per decided tool call.

Every tool call of every channel (chat socket, API, nested run) goes through one call path
in the framework, which announces it as events; every event a turn emits goes through run
history's one write (``chat_app.turn_store.record``), which passes each step's events to
:func:`audit_calls_finished` and writes the rows :func:`audit_events` makes in the step's
own job. So the trail is fed from the one place every path goes through, and adds no job
of its own (a step with finished calls reads the username and the conversation in it).

A call's facts arrive in several steps (``tool_call_started``, then maybe
``approval_requested``/``approval_resolved``, then ``tool_finished``), and rows are never
updated, so they are gathered here, per process, until the call finishes, when its row is
written. The turn runs, and writes its history, in one process.

- **verdict**: from the call policy's verdict that ``tool_finished`` carries (set in the
  one call path, after the tool's body, so a tool's own output cannot claim one):
  ``allow`` (ran without asking; a deciding rule is named), ``deny`` (refused; the rule is
  named), and for an ask: ``approved``/``denied`` (a person decided: ``decided_by``, from
  any tab — control is bound to the conversation's owner, ``chat_app.turn_control``),
  ``refused_unattended`` (nobody was attending), ``ask`` (no person decided: timeout,
  Stop, no approver). ``undecided``: the call never reached the policy (invalid
  arguments, an unknown tool, cut off by Stop before its verdict).
- **channel**: ``nested`` for a call made inside a nested run, else what
  :func:`audit_channel` said when the turn started (``api`` with the API token's name),
  else ``chat``.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone

from openprogram.security.redact import redact_server_paths

__all__ = [
    "audit_calls_finished",
    "audit_channel",
    "audit_events",
    "audit_run_begin",
    "redacted_arguments",
]

_SECRET_KEY = re.compile(
    r"pass(word|phrase)?|secret|token|api[_-]?key|auth|credential|cookie", re.I
)
_MAX_TEXT = 2000
_MAX_RUNS = 10_000
"""Runs whose facts are held at once; past it the oldest are dropped (a run that never
recorded its end must not grow the process forever)."""

_channel: contextvars.ContextVar[tuple[str, str]] = contextvars.ContextVar(
    "openprogram_audit_channel", default=("chat", "")
)

# The reasons the framework and chat_app give when no person decided (see
# openprogram.agent.approvals and chat_app.turn_control / chat_app.approvals).
_UNATTENDED = "nobody is attending this turn"
_NOBODY = ("needs approval but", "no approval for ", "the approval hook ", "the turn was stopped")
_GRANTED = "allowed for this conversation"


@dataclass
class _Call:
    tool: str = ""
    arguments: Any = field(default_factory=dict)
    digest: str = ""
    nested: bool = False
    verdict: str = "allow"
    """Until the call finishes: what its events said so far; its ``tool_finished`` carries
    the call policy's own verdict (``openprogram.programs.call_policy``), which wins for
    allow and deny."""
    rule: str = ""
    by_person: bool = False


@dataclass
class _Run:
    channel: str = "chat"
    detail: str = ""
    calls: dict[str, _Call] = field(default_factory=dict)


_runs: OrderedDict[int, _Run] = OrderedDict()
_lock = threading.Lock()


@contextlib.contextmanager
def audit_channel(*, kind: str, detail: str = "") -> Iterator[None]:
    """Turns started inside this block are recorded as coming from ``kind`` (``api``),
    with ``detail`` (the API token's name)."""
    token = _channel.set((kind, detail))
    try:
        yield
    finally:
        _channel.reset(token)


def audit_run_begin(*, run_id: int) -> None:
    """A turn's run has started in this process: remember its channel (:func:`audit_channel`)."""
    kind, detail = _channel.get()
    with _lock:
        _runs[run_id] = _Run(channel=kind, detail=detail)
        while len(_runs) > _MAX_RUNS:
            _runs.popitem(last=False)


def redacted_arguments(arguments: Any) -> Any:
    """``arguments`` as the trail stores them: server paths hidden (as in tool errors and
    traces), values under secret-looking keys masked, long strings cut."""
    if isinstance(arguments, dict):
        return {
            str(k): "<redacted>" if _SECRET_KEY.search(str(k)) else redacted_arguments(v)
            for k, v in arguments.items()
        }
    if isinstance(arguments, list):
        return [redacted_arguments(v) for v in arguments]
    if isinstance(arguments, str):
        text = redact_server_paths(arguments)
        return text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + "…"
    return arguments


def _digest(arguments: Any) -> str:
    canonical = json.dumps(
        arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def _resolved(call: _Call, event: dict[str, Any]) -> None:
    reason = str(event.get("reason") or "")
    if event.get("approved"):
        call.verdict = "approved"
        call.by_person = reason != _GRANTED
        if not call.by_person:
            call.rule = _GRANTED
    elif _UNATTENDED in reason:
        call.verdict = "refused_unattended"
    elif any(marker in reason for marker in _NOBODY):
        call.verdict = "ask"
    else:
        call.verdict, call.by_person = "denied", True


def _row(run: _Run, call_id: str, call: _Call, event: dict[str, Any]) -> dict[str, Any]:
    policy = event.get("verdict") or ""
    if policy in ("allow", "deny"):
        call.verdict, call.rule = policy, str(event.get("rule") or "")
    elif policy == "ask":
        call.rule = call.rule or str(event.get("rule") or "")
    elif call.verdict == "allow":  # never reached the call policy
        call.verdict = "undecided"
    if call.verdict in ("deny", "denied", "refused_unattended", "ask"):
        outcome = "not_run"
    elif event.get("stopped"):
        outcome = "stopped"
    else:
        outcome = "error" if event.get("is_error") else "ok"
    nested = call.nested or bool(event.get("parent_call_id"))
    return {
        "tool": call.tool or str(event.get("name") or ""),
        "arguments": call.arguments,
        "arguments_sha256": call.digest,
        "verdict": call.verdict,
        "rule": call.rule[:500],
        "outcome": outcome,
        "duration_ms": float(event.get("duration_ms") or 0.0),
        "channel": "nested" if nested else run.channel,
        "channel_detail": "" if nested else run.detail[:200],
        "call_id": call_id,
        "by_person": call.by_person,
    }


def _rows_for(run_id: int, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    with _lock:
        run = _runs.get(run_id)
        if run is None:  # a run begun before a restart, or dropped as the oldest
            run = _runs[run_id] = _Run()
        for event in events:
            kind, call_id = event["type"], str(event.get("call_id") or "")
            if kind == "tool_call_started":
                arguments = event.get("arguments")
                run.calls[call_id] = _Call(
                    tool=str(event.get("name") or ""),
                    arguments=redacted_arguments(arguments if arguments is not None else {}),
                    digest=_digest(arguments if arguments is not None else {}),
                    nested=bool(event.get("parent_call_id")),
                )
            elif kind == "approval_requested":
                call = run.calls.setdefault(call_id, _Call(tool=str(event.get("name") or "")))
                call.verdict, call.rule = "ask", str(event.get("rule") or "")
            elif kind == "approval_resolved":
                _resolved(run.calls.setdefault(call_id, _Call()), event)
            elif kind == "tool_finished":
                call = run.calls.pop(call_id, None) or _Call()
                rows.append(_row(run, call_id, call, event))
            elif kind == "turn_finished":
                _runs.pop(run_id, None)
    return rows


_FACTS = (
    "tool",
    "arguments",
    "arguments_sha256",
    "verdict",
    "rule",
    "outcome",
    "duration_ms",
    "channel",
    "channel_detail",
    "call_id",
)
"""The fields of a row that come from the call's events (:func:`_row`); who and where come
from the run (:func:`audit_events`)."""


def audit_calls_finished(*, run_id: int, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The facts of the calls that finished in ``events`` (one step of run ``run_id``),
    gathered over its steps; earlier steps' facts are held until then. Call it once per
    step, before the step is written: the rows are made by :func:`audit_events`."""
    return _rows_for(run_id, events)


def audit_events(
    *,
    facts: list[dict[str, Any]],
    run_id: int,
    user_id: int | None,
    username: str,
    conversation_id: int | None,
) -> list[dict[str, Any]]:
    """The rows' values (by field attname, for ``core.model_sql.insert_values``) for
    :func:`audit_calls_finished`'s ``facts``: the user's id and username snapshot
    (``decided_by`` too when a person decided) and the conversation as the run stands
    when the step is written (``chat_app.turn_store`` reads and writes them in the step's
    own job, so the trail adds no job of its own)."""
    now = timezone.now()
    return [
        {
            "created": now,
            "user_id": user_id,
            "username": username,
            "decided_by": username if fact["by_person"] else "",
            "conversation_id": conversation_id,
            "run_id": run_id,
            **{name: fact[name] for name in _FACTS},
        }
        for fact in facts
    ]
