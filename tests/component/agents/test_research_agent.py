"""The example research agent, with the offline model, against a page served on loopback."""

from __future__ import annotations

import asyncio
import dataclasses
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from openprogram import config
from openprogram.agent.dispatcher import process_user_turn
from openprogram.agent.events import Event, ToolCallStarted, ToolFinished, TurnRequest
from tests.fakes.openai_server import FakeOpenAIServer, text_reply, tool_calls_reply

# Importing the example package registers its tool, so it is imported only inside
# tests, where clean_registry puts the registry back afterwards.
pytestmark = pytest.mark.usefixtures("clean_registry")

PAGE = (
    b"<html><head><title>Sea otters</title></head><body><h1>Sea otters</h1>"
    b"<p>Sea otters hold hands while they sleep.</p></body></html>"
)


class _PageHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def page_url(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[str]:
    """A page on loopback that web_fetch may read (allow-listed for this port only)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _PageHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    port = server.server_address[1]
    allowed = dataclasses.replace(
        config.get_config(),
        web_fetch_allow_hosts=(f"127.0.0.1:{port}",),
        workspace=tmp_path / "shared-workspace",
    )
    monkeypatch.setattr(config, "_config", allowed)
    yield f"http://127.0.0.1:{port}/otters"
    server.shutdown()
    server.server_close()


@pytest.fixture
def real_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    """A scripted OpenAI-compatible server that litellm talks to over HTTP."""
    with FakeOpenAIServer() as server:
        monkeypatch.setenv("OPENPROGRAM_API_BASE", server.base_url)
        monkeypatch.setenv("OPENPROGRAM_API_KEY", "test")
        yield server


async def run_turn(request: TurnRequest) -> list[Event]:
    async def collect() -> list[Event]:
        return [event async for event in process_user_turn(request)]

    return await asyncio.wait_for(collect(), timeout=30)


def test_the_package_lists_only_research():
    from openprogram.examples.research_agent import PROGRAM_ENTRIES

    assert [entry._agent_tool.name for entry in PROGRAM_ENTRIES] == ["research"]
    tool = PROGRAM_ENTRIES[0]._agent_tool
    assert tool.source == "agent" and "research" in tool.toolsets
    assert set(tool.parameters["properties"]) == {"topic", "urls", "notes_path"}


async def test_research_reads_the_page_and_saves_notes_in_the_workspace(page_url, tmp_path):
    from openprogram.examples.research_agent import ResearchAgent, notes_path_for

    ResearchAgent()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    arguments = json.dumps({"topic": "Sea otters", "urls": [page_url]})
    events = await run_turn(TurnRequest(text=f"/research {arguments}", workspace=workspace))

    notes = (workspace / notes_path_for("Sea otters")).read_text()
    assert notes.startswith("# Research notes: Sea otters\n")
    assert f"## Source 1: {page_url}" in notes
    assert "web_fetch: ok" in notes and "Status: 200 OK" in notes
    (research,) = [e for e in events if isinstance(e, ToolFinished) and e.name == "research"]
    assert not research.is_error
    assert "Saved to research/sea-otters.md" in research.preview
    starts = {e.name: e for e in events if isinstance(e, ToolCallStarted)}
    assert starts["web_fetch"].parent_call_id == starts["research"].call_id
    assert starts["write"].parent_call_id == starts["research"].call_id


def test_research_called_from_python_writes_where_it_is_told(page_url, tmp_path):
    from openprogram.examples.research_agent import ResearchAgent

    agent = ResearchAgent()
    result = agent.research("otters", urls=[page_url], notes_path="notes/otters.md")
    saved = tmp_path / "shared-workspace" / "notes" / "otters.md"
    assert saved.read_text().startswith("# Research notes: otters")
    assert "Saved to notes/otters.md" in result and "write: ok" in result


def test_research_without_a_topic_is_refused():
    from openprogram.examples.research_agent import ResearchAgent

    with pytest.raises(ValueError, match="empty"):
        ResearchAgent().research("  ")


async def test_research_works_through_a_real_model_over_the_wire(page_url, real_model, tmp_path):
    from openprogram.examples.research_agent import ResearchAgent

    ResearchAgent()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    real_model.script(
        tool_calls_reply(("research", {"topic": "otters", "urls": [page_url]})),
        tool_calls_reply(("web_fetch", {"url": page_url})),
        text_reply("- Sea otters hold hands while they sleep."),
        tool_calls_reply(("write", {"path": "otters.md", "content": "# Otters\nThey hold hands."})),
        text_reply("Saved."),
        text_reply("Done: notes saved."),
    )
    events = await run_turn(
        TurnRequest(text="research otters", model="openai/fake-model", workspace=workspace)
    )
    assert events[-1].text == "Done: notes saved."
    (research,) = [e for e in events if isinstance(e, ToolFinished) and e.name == "research"]
    assert "- Sea otters hold hands while they sleep." in research.preview
    assert (workspace / "otters.md").read_text() == "# Otters\nThey hold hands."
    fetch_request, _, write_request = real_model.requests[1:4]
    offered = [tool["function"]["name"] for tool in fetch_request["tools"]]
    assert offered == ["web_fetch"]  # each step offers only the tool it needs
    assert [t["function"]["name"] for t in write_request["tools"]] == ["write"]
    assert page_url in fetch_request["messages"][-1]["content"]
    assert real_model.requests[-1]["messages"][-1]["role"] == "tool"
