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
