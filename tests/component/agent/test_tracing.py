"""OpenTelemetry traces of a turn, exported over real OTLP/HTTP to a local receiver."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from openprogram import telemetry
from openprogram.agent.events import TurnRequest
from tests.component.agent import tools_for_tests as tools
from tests.component.agent.conftest import FAKE_MODEL, run_turn
from tests.fakes.openai_server import text_reply, tool_calls_reply


class _Receiver:
    """An OTLP/HTTP trace collector stand-in: decodes every protobuf export it is sent."""

    def __init__(self) -> None:
        self.spans: list = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest.FromString(body)
                for resource in request.resource_spans:
                    for scope in resource.scope_spans:
                        receiver.spans.extend(scope.spans)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def otlp(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Receiver]:
    receiver = _Receiver()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
    telemetry.reset_tracing()
    yield receiver
    telemetry.reset_tracing()
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT")
    telemetry.reset_tracing()
    receiver.close()


def _attributes(span) -> dict:
    values = {}
    for item in span.attributes:
        value = item.value
        kind = value.WhichOneof("value")
        values[item.key] = (
            list(v.string_value for v in value.array_value.values)
            if kind == "array_value"
            else getattr(value, kind)
        )
    return values


async def test_a_turn_with_two_tool_calls_exports_one_span_tree(otlp, fake_openai, empty_registry):
    tools.register_echo()
    fake_openai.script(
        tool_calls_reply(("echo", {"text": "one"}), ("echo", {"text": "two"})),
        text_reply("Both echoed."),
    )

    events = await run_turn(TurnRequest(text="secret prompt", model=FAKE_MODEL, user_id=7))
    assert events[-1].stop_reason == "completed"
    assert telemetry.flush_tracing(5)

    by_name: dict[str, list] = {}
    for span in otlp.spans:
        by_name.setdefault(span.name, []).append(span)
    (root,) = by_name["invoke_agent openprogram"]
    model_calls = by_name[f"chat {FAKE_MODEL}"]
    tool_calls = by_name["execute_tool echo"]
    assert len(model_calls) == 2 and len(tool_calls) == 2
    assert {span.trace_id for span in otlp.spans} == {root.trace_id}
    assert all(span.parent_span_id == root.span_id for span in model_calls + tool_calls)

    root_attributes = _attributes(root)
    assert root_attributes["gen_ai.request.model"] == FAKE_MODEL
    assert root_attributes["openprogram.stop_reason"] == "completed"
    assert root_attributes["openprogram.tools.offered"] == 1
    first_call = _attributes(model_calls[0])
    assert first_call["gen_ai.operation.name"] == "chat"
    assert first_call["gen_ai.usage.input_tokens"] > 0
    assert first_call["gen_ai.response.finish_reasons"] == ["tool_calls"]
    tool = _attributes(tool_calls[0])
    assert tool["gen_ai.tool.name"] == "echo"
    assert tool["openprogram.tool.duration_ms"] >= 0
    # No prompt or result text leaves the server unless a setting asks for it.
    exported = repr([_attributes(span) for span in otlp.spans])
    assert "secret prompt" not in exported and "echo: one" not in exported


async def test_content_is_exported_only_when_asked(otlp, fake_openai, empty_registry, monkeypatch):
    monkeypatch.setenv("OPENPROGRAM_OTEL_CAPTURE_CONTENT", "1")
    fake_openai.script(text_reply("Hello there."))

    await run_turn(TurnRequest(text="what I typed", model=FAKE_MODEL))
    assert telemetry.flush_tracing(5)

    (root,) = [span for span in otlp.spans if span.name == "invoke_agent openprogram"]
    attributes = _attributes(root)
    assert attributes["openprogram.user_text"] == "what I typed"
    assert attributes["openprogram.answer_text"] == "Hello there."


async def test_an_unreachable_collector_never_fails_a_turn(
    fake_openai, empty_registry, monkeypatch, unused_tcp_port
):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{unused_tcp_port}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")
    telemetry.reset_tracing()
    before = telemetry.dropped_spans()
    try:
        fake_openai.script(text_reply("still fine"))
        events = await run_turn(TurnRequest(text="hi", model=FAKE_MODEL))
        assert events[-1].stop_reason == "completed"
        assert events[-1].text == "still fine"
        telemetry.flush_tracing(10)
        assert telemetry.dropped_spans() > before
    finally:
        monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT")
        telemetry.reset_tracing()


def test_tracing_is_off_without_an_endpoint(monkeypatch):
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    telemetry.reset_tracing()
    assert telemetry.turn_trace(TurnRequest(text="x")) is None
