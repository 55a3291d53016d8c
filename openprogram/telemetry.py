"""OpenTelemetry traces of every turn, built from the turn's own events.

Off unless the standard ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) is set and ``OTEL_SDK_DISABLED`` is not true;
then every turn exports one trace over OTLP/HTTP, configured by the standard
``OTEL_*`` variables (headers, timeout, ``OTEL_SERVICE_NAME``, ``OTEL_BSP_*``):

- ``invoke_agent openprogram`` — the turn: model, conversation, stop reason, tokens,
  cost, and the layer-by-layer resolution summary (how many tools each layer removed);
- ``chat <model>`` — each model call, with the GenAI semantic conventions' attributes
  (``gen_ai.request.model``, ``gen_ai.usage.input_tokens``/``output_tokens``,
  ``gen_ai.response.finish_reasons``);
- ``execute_tool <name>`` — each tool call (nested calls under their parent), with its
  duration, error and the time it waited for approval.

No prompt, answer, argument or result text is exported unless
``OPENPROGRAM_OTEL_CAPTURE_CONTENT`` is true. Spans are built from the events the turn
yields (no hooks in the hot path): when tracing is off, a turn pays one cached check.
Export is batched in a background thread with a bounded queue, so an unreachable
collector never slows or fails a turn; spans it could not deliver are counted and the
count logged.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from openprogram.agent.events import (
    ApprovalRequested,
    ApprovalResolved,
    Event,
    ModelCallFinished,
    ToolCallStarted,
    ToolFinished,
    ToolsResolved,
    TurnError,
    TurnFinished,
    TurnRequest,
)

__all__ = [
    "TurnTrace",
    "configure_tracing",
    "dropped_spans",
    "flush_tracing",
    "reset_tracing",
    "turn_trace",
]

_log = logging.getLogger(__name__)
_TRUE = {"1", "true", "yes", "on"}
_lock = threading.Lock()
_state: dict[str, Any] = {"checked": False, "tracer": None, "provider": None}
_dropped = Counter[str]()


def _env_enabled() -> bool:
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() in _TRUE:
        return False
    return bool(
        os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


def _capture_content() -> bool:
    return os.environ.get("OPENPROGRAM_OTEL_CAPTURE_CONTENT", "").strip().lower() in _TRUE


def dropped_spans() -> int:
    """Spans the exporter failed to deliver since start-up."""
    return _dropped["spans"]


def configure_tracing(tracer_provider: Any | None) -> None:
    """Use ``tracer_provider`` (an SDK ``TracerProvider``) for turn traces; None turns them off.

    Hosts and tests call this; otherwise the environment decides on the first turn.
    """
    with _lock:
        _state["checked"] = True
        _state["provider"] = tracer_provider
        _state["tracer"] = (
            None if tracer_provider is None else tracer_provider.get_tracer("openprogram")
        )


def reset_tracing() -> None:
    """Flush and forget the current tracer; the environment is read again on the next turn."""
    flush_tracing()
    with _lock:
        provider = _state["provider"]
        _state.update(checked=False, tracer=None, provider=None)
    if provider is not None:
        provider.shutdown()


def flush_tracing(timeout_seconds: float = 10.0) -> bool:
    """Export every finished span now (at shutdown, in tests); True when all went out."""
    provider = _state["provider"]
    return True if provider is None else bool(provider.force_flush(int(timeout_seconds * 1000)))


def _tracer() -> Any | None:
    if _state["checked"]:
        return _state["tracer"]
    with _lock:
        if not _state["checked"]:
            provider = _otlp_provider() if _env_enabled() else None
            _state["provider"] = provider
            _state["tracer"] = None if provider is None else provider.get_tracer("openprogram")
            _state["checked"] = True
    return _state["tracer"]


def _otlp_provider() -> Any | None:
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult
    except ImportError:
        _log.warning("OTEL_EXPORTER_OTLP_ENDPOINT is set but the OpenTelemetry SDK is missing")
        return None

    class _CountingExporter(OTLPSpanExporter):
        def export(self, spans: Sequence[Any]) -> Any:
            try:
                result = super().export(spans)
            except Exception:
                result = SpanExportResult.FAILURE
            if result is not SpanExportResult.SUCCESS:
                _dropped["spans"] += len(spans)
                _log.warning(
                    "could not export %d span(s) to the OTLP endpoint; %d dropped so far",
                    len(spans),
                    _dropped["spans"],
                )
            return result

    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "openprogram")})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(_CountingExporter()))
    return provider


def turn_trace(request: TurnRequest) -> TurnTrace | None:
    """A trace for this turn, or None when tracing is off."""
    tracer = _tracer()
    return None if tracer is None else TurnTrace(tracer, request, _capture_content())


def _rejections(explain: list[dict[str, Any]]) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for row in explain:
        layer = row.get("layer") or row.get("rejected_by")
        if layer and not row.get("offered", False):
            counts[str(layer)] += 1
    return dict(counts)


class TurnTrace:
    """Turns one turn's event stream into a span tree."""

    def __init__(self, tracer: Any, request: TurnRequest, capture: bool) -> None:
        from opentelemetry import trace

        self._trace = trace
        self._tracer = tracer
        self._capture = capture
        self._root = tracer.start_span(
            "invoke_agent openprogram",
            kind=trace.SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "openprogram",
                "gen_ai.request.model": request.model,
                "gen_ai.conversation.id": str(request.conversation_id or ""),
                "openprogram.user.id": str(request.user_id or ""),
                "openprogram.attended": request.attended,
            },
        )
        if capture:
            self._root.set_attribute("openprogram.user_text", request.text)
        self._tools: dict[str, Any] = {}
        self._approval_started: dict[str, int] = {}

    def _child_context(self, parent_call_id: str | None) -> Any:
        parent = self._tools.get(parent_call_id or "") or self._root
        return self._trace.set_span_in_context(parent)

    def observe(self, event: Event) -> None:
        try:
            self._observe(event)
        except Exception:  # a tracing bug must never fail a turn
            _log.exception("could not trace %r", getattr(event, "type", event))

    def _observe(self, event: Event) -> None:
        now = time.time_ns()
        if isinstance(event, ToolsResolved):
            self._root.set_attribute("openprogram.tools.offered", len(event.tools))
            self._root.set_attribute("openprogram.tools.deferred", len(event.deferred))
            for layer, count in _rejections(event.explain).items():
                self._root.set_attribute(f"openprogram.resolution.rejected.{layer}", count)
        elif isinstance(event, ModelCallFinished):
            span = self._tracer.start_span(
                f"chat {event.model}",
                context=self._child_context(None),
                kind=self._trace.SpanKind.CLIENT,
                start_time=now - int(event.duration_ms * 1_000_000),
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": event.model,
                    "gen_ai.usage.input_tokens": event.prompt_tokens,
                    "gen_ai.usage.output_tokens": event.completion_tokens,
                    "gen_ai.usage.cache_read.input_tokens": event.cached_tokens,
                    "gen_ai.response.finish_reasons": [event.finish_reason or ""],
                    "openprogram.cost_usd": event.cost_usd,
                    "openprogram.price_known": event.price_known,
                    "openprogram.usage.estimated": event.estimated,
                },
            )
            span.end(end_time=now)
        elif isinstance(event, ToolCallStarted):
            span = self._tracer.start_span(
                f"execute_tool {event.name}",
                context=self._child_context(event.parent_call_id),
                start_time=now,
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": event.name,
                    "gen_ai.tool.call.id": event.call_id,
                },
            )
            if self._capture:
                span.set_attribute("gen_ai.tool.call.arguments", str(event.arguments))
            self._tools[event.call_id] = span
        elif isinstance(event, ApprovalRequested):
            self._approval_started[event.call_id] = now
        elif isinstance(event, ApprovalResolved):
            span = self._tools.get(event.call_id)
            started = self._approval_started.pop(event.call_id, None)
            if span is not None and started is not None:
                span.set_attribute("openprogram.approval.wait_ms", (now - started) / 1e6)
                span.set_attribute("openprogram.approval.approved", event.approved)
        elif isinstance(event, ToolFinished):
            span = self._tools.pop(event.call_id, None)
            if span is not None:
                span.set_attribute("openprogram.tool.duration_ms", event.duration_ms)
                if event.is_error:
                    span.set_attribute("error.type", "tool_error")
                    span.set_status(self._trace.Status(self._trace.StatusCode.ERROR))
                if self._capture:
                    span.set_attribute("gen_ai.tool.call.result", event.preview)
                span.end(end_time=now)
        elif isinstance(event, TurnError):
            self._root.set_attribute("error.type", event.kind)
            self._root.set_status(self._trace.Status(self._trace.StatusCode.ERROR, event.kind))
        elif isinstance(event, TurnFinished):
            self._root.set_attribute("openprogram.stop_reason", event.stop_reason)
            self._root.set_attribute(
                "gen_ai.usage.input_tokens", event.usage.get("prompt_tokens", 0)
            )
            self._root.set_attribute(
                "gen_ai.usage.output_tokens", event.usage.get("completion_tokens", 0)
            )
            self._root.set_attribute("openprogram.cost_usd", event.cost_usd)
            if self._capture:
                self._root.set_attribute("openprogram.answer_text", event.text)

    def finish(self) -> None:
        for span in self._tools.values():
            span.end()
        self._tools.clear()
        self._root.end()
