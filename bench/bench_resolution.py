"""Tool resolution speed at scale, and what deferring a large MCP surface saves in tokens.

1. Median ``agent_tools`` time (the dispatcher's path: only_available=True)
   at 100, 1,000 and 10,000 registered tools, half of them deferred MCP tools,
   with a chat profile, a deny list and global disables, wall and CPU time,
   beside pydantic-ai's ``FilteredToolset.get_tools`` listing the same tools with
   the same predicate (issue #11, item 2), and the CPU cost of ``explain()`` for
   an outcome seen before and for a new one. Target: < 5 ms at 10,000, no worse
   than the peer, no worse than linear growth.
2. Prompt tokens (tiktoken cl100k_base) of 500 MCP-style tools shipped in full
   versus deferred (catalog block + the tool_search schema). Target: < 10 %, with
   every tool still named in the catalog.

The registry is snapshotted and restored, so the bench leaves nothing behind.
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from bench._util import print_table
from openprogram.agent.types import AgentTool
from openprogram.programs import registry
from openprogram.programs.deferred import (
    deferred_catalog_names,
    deferred_catalog_text,
    tool_search,
)
from openprogram.programs.policy import agent_tools, resolve_tools
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


_PEER_ROUNDS = {100: 41, 1_000: 21, 10_000: 7}
"""pydantic-ai lists 10,000 tools in about a quarter of a second; fewer rounds keep the run short."""


@dataclass(frozen=True)
class _Scenario:
    """One registry size: the population and the arguments both frameworks filter with."""

    tools: list[AgentTool]
    profile: list[str]
    deny: list[str]
    disabled: set[str]

    @classmethod
    def of_size(cls, size: int) -> _Scenario:
        tools = _population(size)
        names = [tool.name for tool in tools]
        return cls(tools, names[: size * 3 // 4], names[::10], set(names[3::20]))


@dataclass(frozen=True)
class _Timing:
    wall: float
    cpu: float

    @classmethod
    def median_of(cls, samples: list[tuple[float, float]]) -> _Timing:
        return cls(
            statistics.median(wall for wall, _ in samples),
            statistics.median(cpu for _, cpu in samples),
        )


def _sample(fn: Callable[[], object]) -> tuple[float, float]:
    started, cpu_started = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - started, time.process_time() - cpu_started


@dataclass(frozen=True)
class _OpenProgramRun:
    resolving: _Timing
    explaining: _Timing
    """explain() on a fresh resolution whose outcome was seen before (the dispatcher's case)."""
    explaining_new: _Timing
    """explain() when the outcome is new (another deny list): every row is built."""
    offered: list[str]


def _time_openprogram(scenario: _Scenario) -> _OpenProgramRun:
    snapshot = registry.snapshot_registry()
    try:
        registry.reset_registry()
        registry.register(tool_search)
        for tool in scenario.tools:
            registry.register(tool)
        kwargs = {
            "profile": scenario.profile,
            "deny": scenario.deny,
            "disabled": scenario.disabled,
            "only_available": True,
        }
        offered = [tool.name for tool in agent_tools(**kwargs)]
        resolve_tools(**kwargs).explain()
        resolving = [_sample(lambda: agent_tools(**kwargs)) for _ in range(_ROUNDS)]
        explaining = [_sample(resolve_tools(**kwargs).explain) for _ in range(_ROUNDS)]
        explaining_new = []
        for extra in scenario.tools[1 : _ROUNDS + 1]:
            # One more denied name makes an outcome no earlier resolution had.
            fresh = resolve_tools(**{**kwargs, "deny": [*scenario.deny, extra.name]})
            explaining_new.append(_sample(fresh.explain))
        return _OpenProgramRun(
            _Timing.median_of(resolving),
            _Timing.median_of(explaining),
            _Timing.median_of(explaining_new),
            offered,
        )
    finally:
        registry.restore_registry(snapshot)


def _time_pydantic_ai(scenario: _Scenario, rounds: int) -> tuple[_Timing, list[str]] | None:
    """pydantic-ai's FilteredToolset over a FunctionToolset of the same tools, or None."""
    try:
        from pydantic_ai import RunContext
        from pydantic_ai.models.test import TestModel
        from pydantic_ai.tools import Tool
        from pydantic_ai.toolsets import FunctionToolset
        from pydantic_ai.usage import RunUsage
    except ImportError:
        return None

    def never_called(**_: object) -> None:
        raise RuntimeError("bench tools are never executed")

    peers = []
    for tool in scenario.tools:
        # from_schema skips pydantic's schema generation: setup cost is not what we measure.
        peer = Tool.from_schema(never_called, tool.name, tool.description, tool.parameters)
        peer.defer_loading = tool.defer
        peers.append(peer)
    profile, deny, disabled = set(scenario.profile), set(scenario.deny), scenario.disabled
    toolset = FunctionToolset(peers).filtered(
        lambda _ctx, tool_def: (
            tool_def.name in profile and tool_def.name not in deny and tool_def.name not in disabled
        )
    )
    context = RunContext(deps=None, model=TestModel(), usage=RunUsage())

    async def run() -> tuple[list[tuple[float, float]], list[str]]:
        listed = list(await toolset.get_tools(context))
        samples = []
        for _ in range(rounds):
            started, cpu_started = time.perf_counter(), time.process_time()
            await toolset.get_tools(context)
            samples.append((time.perf_counter() - started, time.process_time() - cpu_started))
        return samples, listed

    samples, listed = asyncio.run(run())
    return _Timing.median_of(samples), listed


def _resolution_row(size: int, baseline_per_tool: float | None) -> tuple[list[object], float]:
    scenario = _Scenario.of_size(size)
    run = _time_openprogram(scenario)
    ours, offered = run.resolving, run.offered
    peer = _time_pydantic_ai(scenario, _PEER_ROUNDS[size])
    if peer is not None and sorted(peer[1]) != sorted(set(offered) - {tool_search.name}):
        raise AssertionError(f"pydantic-ai listed a different tool set at {size:,} tools")
    per_tool = ours.wall / size
    baseline = baseline_per_tool or per_tool
    peer_cells = (
        ["not installed"] * 3
        if peer is None
        else [_ms(peer[0].wall), _ms(peer[0].cpu), f"{peer[0].wall / ours.wall:.0f}×"]
    )
    row = [
        f"{size:,}",
        _ms(ours.wall),
        _ms(ours.cpu),
        _ms(run.explaining.cpu),
        _ms(run.explaining_new.cpu),
        f"{per_tool / baseline:.2f}×",
        *peer_cells,
        f"{len(offered):,}",
    ]
    return row, baseline


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f}"


def _token_rows() -> list[list[object]]:
    rng = random.Random(500)
    tools = [_mcp_tool(index, rng) for index in range(500)]
    full = tools_prompt_tokens(tools)
    search_schema = tools_prompt_tokens([tool_search])
    rows: list[list[object]] = [
        ["full: every schema in tools=[]", f"{full:,}", "100.0 %", "500, with schemas"]
    ]
    for label, budget in (
        ("deferred: default catalog (names only past 6,000 chars)", 6_000),
        ("deferred: unbudgeted catalog (name + description each)", 10**9),
    ):
        text = deferred_catalog_text(tools, budget_chars=budget)
        total = count_tokens(text) + search_schema
        named = len(set(deferred_catalog_names(text)) & {tool.name for tool in tools})
        rows.append([f"{label} + tool_search", f"{total:,}", f"{100 * total / full:.1f} %", named])
    return rows


def main() -> None:
    rows, baseline = [], None
    for size in _SIZES:
        row, baseline = _resolution_row(size, baseline)
        rows.append(row)
    print_table(
        "Tool resolution at scale (half deferred; profile, deny list, global disables): "
        "OpenProgram agent_tools vs pydantic-ai FilteredToolset.get_tools",
        [
            "registered tools",
            "OpenProgram median ms",
            "OpenProgram CPU ms",
            "explain() CPU ms",
            "explain(), new outcome, CPU ms",
            "per-tool vs 100",
            "pydantic-ai median ms",
            "pydantic-ai CPU ms",
            "pydantic-ai / OpenProgram",
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
