"""Tool resolution speed at scale, and what deferring a large MCP surface saves in tokens.

1. Median ``resolve_tools`` time (the dispatcher's path: only_available=True)
   at 100, 1,000 and 10,000 registered tools, half of them deferred MCP tools,
   with a chat profile, a deny list and global disables. Target: < 5 ms at
   10,000 and no worse than linear growth.
2. Prompt tokens (tiktoken cl100k_base) of 500 MCP-style tools shipped in full
   versus deferred (catalog block + the tool_search schema). Target: < 10 %.

The registry is snapshotted and restored, so the bench leaves nothing behind.
"""

from __future__ import annotations

import os
import random
import re
import statistics
import time

from bench._util import print_table
from openprogram.agent.types import AgentTool
from openprogram.programs import registry
from openprogram.programs.deferred import deferred_catalog_text, tool_search
from openprogram.programs.policy import resolve_tools
from openprogram.programs.tokens import count_tokens, tokenizer_name, tools_prompt_tokens

__all__ = ["main"]

_SIZES = (100, 1_000, 10_000)
_ROUNDS = 41
_VERBS = ("create", "list", "get", "update", "delete", "search", "sync", "archive", "export")
_NOUNS = ("issue", "pull_request", "comment", "file", "branch", "event", "record", "user", "job")
_SERVERS = ("github", "jira", "postgres", "calendar", "drive", "slack", "sentry", "linear")
_PARAMS = (
    ("repository", "string", "Owner and name of the repository, for example 'acme/web'."),
    ("title", "string", "A short, human-readable title shown in lists and notifications."),
    ("body", "string", "The full text in Markdown; mentions and links are rendered."),
    ("labels", "array", "Labels to attach; unknown labels are created on the fly."),
    ("assignee", "string", "Login of the user who should own this item."),
    ("state", "string", "Filter by state: 'open', 'closed' or 'all' (default 'open')."),
    ("since", "string", "Only items updated at or after this ISO 8601 timestamp."),
    ("limit", "integer", "Maximum number of items to return, between 1 and 100."),
    ("cursor", "string", "Opaque pagination cursor returned by a previous call."),
    (
        "dry_run",
        "boolean",
        "Validate the request and report what would change, without changing it.",
    ),
)


class _BenchTool(AgentTool):
    async def execute(self, call_id, args, cancel=None, on_update=None):
        raise RuntimeError("bench tools are never executed")


def _mcp_tool(index: int, rng: random.Random) -> AgentTool:
    server = _SERVERS[index % len(_SERVERS)]
    verb, noun = rng.choice(_VERBS), rng.choice(_NOUNS)
    params = rng.sample(_PARAMS, rng.randint(3, 8))
    properties = {}
    for name, kind, description in params:
        prop: dict[str, object] = {"type": kind, "description": description}
        if kind == "array":
            prop["items"] = {"type": "string"}
        properties[name] = prop
    return _BenchTool(
        name=f"mcp__{server}__{verb}_{noun}_{index}",
        description=(
            f"{verb.capitalize()} a {noun.replace('_', ' ')} in {server.capitalize()}. "
            f"Requires the {server} connection to be authorised; returns the {noun} as JSON "
            "with its id, URL and timestamps."
        ),
        parameters={
            "type": "object",
            "properties": properties,
            "required": [params[0][0]],
            "additionalProperties": False,
        },
        source="mcp",
        server=server,
        defer=True,
    )


def _population(size: int) -> list[AgentTool]:
    rng = random.Random(size)
    tools = []
    for index in range(size):
        if index % 2:
            tools.append(_mcp_tool(index, rng))
        else:
            tools.append(_BenchTool(name=f"local_tool_{index}", description=f"Local tool {index}."))
    return tools


def _time_resolution(size: int) -> tuple[float, float, float, int]:
    """(median wall s, best wall s, median CPU s of this thread, tools offered)."""
    snapshot = registry.snapshot_registry()
    try:
        registry.reset_registry()
        registry.register(tool_search)
        tools = _population(size)
        for tool in tools:
            registry.register(tool)
        names = [tool.name for tool in tools]
        profile = names[: size * 3 // 4]
        deny = names[::10]
        disabled = set(names[3::20])
        kwargs = {"profile": profile, "deny": deny, "disabled": disabled, "only_available": True}
        offered = len(resolve_tools(**kwargs).tools)
        samples, cpu_samples = [], []
        for _ in range(_ROUNDS):
            started, cpu_started = time.perf_counter(), time.thread_time()
            resolve_tools(**kwargs)
            samples.append(time.perf_counter() - started)
            cpu_samples.append(time.thread_time() - cpu_started)
        return statistics.median(samples), min(samples), statistics.median(cpu_samples), offered
    finally:
        registry.restore_registry(snapshot)


def _token_rows() -> list[list[object]]:
    rng = random.Random(500)
    tools = [_mcp_tool(index, rng) for index in range(500)]
    full = tools_prompt_tokens(tools)
    search_schema = tools_prompt_tokens([tool_search])
    rows: list[list[object]] = [["full schemas (500 tools)", full, "100.0 %", "500 with schemas"]]
    for label, budget in (
        ("deferred, default 6,000-char catalog", 6_000),
        ("deferred, unbudgeted catalog", 10**9),
    ):
        text = deferred_catalog_text(tools, budget_chars=budget)
        total = count_tokens(text) + search_schema
        listed = len(set(re.findall(r"mcp__\w+", text)) & {tool.name for tool in tools})
        rows.append([f"{label} + tool_search", total, f"{100 * total / full:.1f} %", listed])
    return rows


def main() -> None:
    rows = []
    baseline_per_tool = None
    for size in _SIZES:
        seconds, best, cpu, offered = _time_resolution(size)
        per_tool = seconds / size
        baseline_per_tool = baseline_per_tool or per_tool
        rows.append(
            [
                f"{size:,}",
                f"{seconds * 1000:.3f}",
                f"{best * 1000:.3f}",
                f"{cpu * 1000:.3f}",
                f"{per_tool * 1e9:.0f}",
                f"{per_tool / baseline_per_tool:.2f}×",
                f"{offered:,}",
            ]
        )
    print_table(
        "Tool resolution, dispatcher path (half deferred; profile, deny list, global disables)",
        [
            "registered tools",
            "median ms",
            "best ms",
            "median CPU ms",
            "ns per tool",
            "per-tool vs 100",
            "offered",
        ],
        rows,
    )
    # Medians of millisecond work swing with other processes on the machine; say how busy it was.
    print(f"load average during the run: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores\n")
    print_table(
        f"Prompt tokens ({tokenizer_name()}): 500 MCP tools in full vs deferred",
        ["form", "tokens", "of full", "tools named in prompt"],
        _token_rows(),
    )
