"""Tool resolution with a team policy of 200 rules, and the per-call verdict's cost.

``python -m bench resolution`` runs this after ``bench_resolution``. At 100, 1,000 and
10,000 registered tools (the same population: half deferred MCP tools, with a profile,
a deny list and global disables), with 200 rules at organisation, group and user
scope (exact names, globs over MCP servers, conditional rules), it reports:

- the dispatcher's resolution with the policy, median of a turn that repeats its
  user's policy (a fresh ``PolicySet`` built each time, as a turn start builds one);
  target < 2 ms at 10,000 tools (issue #34);
- the first resolution of a policy never seen for this registry version (layer 5's
  removals computed);
- one call's verdict (``rules.decide``) against the 200 rules.
"""

from __future__ import annotations

import os
import random
import statistics
import time
from collections.abc import Callable

from bench._util import print_table
from bench.bench_resolution import _SERVERS, _Scenario
from openprogram.agent.types import AgentTool
from openprogram.programs import registry
from openprogram.programs.deferred import tool_search
from openprogram.programs.policy import agent_tools, resolve_tools
from openprogram.programs.rule_conditions import Condition
from openprogram.programs.rules import PolicySet, Rule, decide

__all__ = ["main"]

_SIZES = (100, 1_000, 10_000)
_ROUNDS = 41
_RULES = 200


def _rules(names: list[str], seed: int) -> tuple[Rule, ...]:
    rng = random.Random(seed)
    local = [name for name in names if not name.startswith("mcp__")]
    rules: list[Rule] = []
    for server in _SERVERS:  # 24 glob rules
        rules.append(Rule(f"mcp__{server}__delete_*", "deny", id=len(rules)))
        rules.append(Rule(f"mcp__{server}__*", "ask", may_be_relaxed=True, id=len(rules)))
        rules.append(
            Rule(f"mcp__{server}__list_*", "allow", scope="group", group="eng", id=len(rules))
        )
    for name in rng.sample(local, min(56, len(local))):  # name-only denies
        rules.append(Rule(name, "deny", may_be_relaxed=rng.random() < 0.3, id=len(rules)))
    while len(rules) < _RULES:
        name = rng.choice(names)
        pointer = Condition("pointer", pointer="/state", value='"closed"')
        pattern = Condition("pointer", pointer="/title", op="matches", value="(?i).*draft.*")
        scope = rng.choice(("org", "group", "user"))
        verdict = "allow" if scope == "user" else rng.choice(("allow", "ask", "deny"))
        rules.append(
            Rule(
                name,
                verdict,  # type: ignore[arg-type]
                scope=scope,  # type: ignore[arg-type]
                group="eng" if scope == "group" else "",
                condition=rng.choice((pointer, pattern)),
                id=len(rules),
            )
        )
    return tuple(rules)


def _median_ms(fn: Callable[[], object], rounds: int = _ROUNDS, *, cpu: bool = False) -> float:
    """Median wall time (or CPU time: ``time.process_time``, which load does not inflate
    as much) of ``fn`` in milliseconds."""
    clock = time.process_time if cpu else time.perf_counter
    samples = []
    for _ in range(rounds):
        started = clock()
        fn()
        samples.append(clock() - started)
    return statistics.median(samples) * 1000


def _row(size: int) -> list[object]:
    scenario = _Scenario.of_size(size)
    names = [tool.name for tool in scenario.tools]
    rules = _rules(names, size)
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
        plain = _median_ms(lambda: agent_tools(**kwargs))
        agent_tools(**kwargs, policy=PolicySet(rules=rules))
        repeated = _median_ms(lambda: agent_tools(**kwargs, policy=PolicySet(rules=rules)))
        plain_cpu = _median_ms(lambda: agent_tools(**kwargs), cpu=True)
        repeated_cpu = _median_ms(
            lambda: agent_tools(**kwargs, policy=PolicySet(rules=rules)), cpu=True
        )
        cold_samples = []
        for index in range(9):
            fresh = PolicySet(rules=(*rules[:-1], Rule("extra", "deny", id=f"new{index}")))
            started = time.perf_counter()
            agent_tools(**kwargs, policy=fresh)
            cold_samples.append(time.perf_counter() - started)
        cold = statistics.median(cold_samples) * 1000
        offered = resolve_tools(**kwargs, policy=PolicySet(rules=rules)).names
        policy = PolicySet(rules=rules)
        tool: AgentTool = registry.get(next(n for n in names if n.startswith("mcp__jira__")))
        args = {"state": "closed", "title": "A draft"}
        per_call = _median_ms(lambda: decide(policy, tool, args), rounds=401) * 1000
    finally:
        registry.restore_registry(snapshot)
    return [
        f"{size:,}",
        len(rules),
        f"{plain:.3f}",
        f"{repeated:.3f}",
        f"{repeated_cpu - plain_cpu:.3f}",
        f"{cold:.3f}",
        f"{per_call:.1f}",
        f"{len(offered):,}",
    ]


def main() -> None:
    print_table(
        f"Resolution with a team policy of {_RULES} rules (org, group, user; names, globs, "
        "conditions); target < 2 ms at 10,000 tools",
        [
            "registered tools",
            "rules",
            "no policy median ms",
            "with policy median ms (repeated policy)",
            "the policy's CPU ms (with minus without)",
            "new policy, first resolution ms",
            "one call's verdict µs",
            "offered with policy",
        ],
        [_row(size) for size in _SIZES],
    )
    print(f"load average during the run: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores\n")
