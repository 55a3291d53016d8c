"""``ResearchAgent``: reads sources on a topic through the model and saves Markdown notes.

Every step is one model run with a narrow tool set, and every step's prompt
ends with the exact tool call as a ``/tool {json}`` line. A real model reads
the prompt as an instruction and calls the tool itself (then summarises what
it read); the offline model executes the ``/tool`` line literally and answers
with its fixed summary of the result (tool name, ok/error, first lines). So the
agent is useful with a real model and fully deterministic with the offline
one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from openprogram.agentic_programming import Agent

__all__ = ["ResearchAgent", "Source", "notes_path_for"]

_SLUG = re.compile(r"[^a-z0-9]+")


def notes_path_for(topic: str) -> str:
    """Where notes on ``topic`` go by default, relative to the workspace."""
    slug = _SLUG.sub("-", topic.lower()).strip("-")[:60] or "notes"
    return f"research/{slug}.md"


@dataclass(frozen=True)
class Source:
    url: str | None
    summary: str


def _command(tool: str, arguments: dict[str, object]) -> str:
    return f"/{tool} {json.dumps(arguments, ensure_ascii=False)}"


class ResearchAgent(Agent):
    """Reads pages about a topic and keeps the notes in the workspace."""

    method_options = {
        "research": {
            "tool": True,
            "name": "research",
            "toolset": ["research"],
            "expose": "io",
            "timeout": 600,
            "max_result_chars": 20_000,
        },
    }

    def research(self, topic: str, urls: list[str] | None = None, notes_path: str = "") -> str:
        """Research a topic: read web pages about it and save notes to a Markdown file.

        Args:
            topic: The question or subject to research.
            urls: Pages to read (http or https). Without them the model searches the web
                itself, which needs the web_search tool to be configured.
            notes_path: Where to save the notes, relative to the workspace; by default
                research/<topic>.md.
        """
        if not topic.strip():
            raise ValueError("research needs a topic, got an empty one")
        path = notes_path or notes_path_for(topic)
        reads = [self._read_source(topic, url) for url in urls or ()]
        sources = reads or [self._search(topic)]
        notes = self._format_notes(topic, sources)
        saved = self._save_notes(path, notes)
        return f"{notes}\n\n---\nSaved to {path}: {saved}"

    def _read_source(self, topic: str, url: str) -> Source:
        prompt = (
            f"Read the page below and summarise in at most five bullet points what it says "
            f"about {topic!r}. Quote names and numbers exactly.\n"
            + _command("web_fetch", {"url": url})
        )
        return Source(url=url, summary=self(prompt, allow=["web_fetch"]))

    def _search(self, topic: str) -> Source:
        prompt = (
            f"Find two or three reliable sources about {topic!r} with web_search, read the "
            "best ones with web_fetch, and summarise what they say, naming each URL.\n"
            + _command("web_search", {"query": topic})
        )
        return Source(url=None, summary=self(prompt, allow=["web_search", "web_fetch"]))

    def _format_notes(self, topic: str, sources: list[Source]) -> str:
        sections = [f"# Research notes: {topic}", ""]
        for number, source in enumerate(sources, start=1):
            sections.append(f"## Source {number}: {source.url or 'web search'}")
            sections.append("")
            sections.append(source.summary.strip() or "(nothing found)")
            sections.append("")
        return "\n".join(sections).rstrip() + "\n"

    def _save_notes(self, path: str, notes: str) -> str:
        prompt = (
            f"Save the notes below to {path!r} exactly as given, then confirm in one line.\n"
            + _command("write", {"path": path, "content": notes})
        )
        return self(prompt, allow=["write"]).strip()
