"""The team policy at call time: the verdict on this call, and on each redirect it takes.

``call_policy.run_with_policy`` asks :func:`call_decision` before anything else runs
(deny: an error result naming the rule; ask: the approval card; allow: run), then
runs the body inside :func:`deciding` so code deep in a tool can ask again about
what the call is about to reach: ``web_fetch``'s fetcher calls
:func:`redirect_refusal` at every redirect hop, and a hop whose verdict is stricter
than the first URL's is refused, naming the rule. So a ``web_fetch`` allowed only
to ``*.example.com`` cannot be walked to another host by a redirect.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from openprogram.agent.context import get_turn
from openprogram.agent.types import AgentTool
from openprogram.programs._bash_words import simple_command
from openprogram.programs._path_globs import normalised_path
from openprogram.programs.rule_conditions import FILE_TOOLS
from openprogram.programs.rules import RANK, PolicyDecision, PolicySet, decide

__all__ = ["call_decision", "deciding", "redirect_refusal", "suggestion"]


@dataclasses.dataclass(frozen=True)
class _Deciding:
    policy: PolicySet | None
    tool: AgentTool
    args: dict[str, Any]
    decision: PolicyDecision


_current: ContextVar[_Deciding | None] = ContextVar("openprogram_call_rules", default=None)


def call_decision(tool: AgentTool, args: dict[str, Any]) -> PolicyDecision:
    """The verdict on this call under the current turn's policy (none: the tool's default)."""
    turn = get_turn()
    return decide(turn.policy if turn is not None else None, tool, args)


@contextlib.contextmanager
def deciding(tool: AgentTool, args: dict[str, Any], decision: PolicyDecision) -> Iterator[None]:
    """While the body runs: what was decided, for :func:`redirect_refusal`."""
    turn = get_turn()
    token = _current.set(_Deciding(turn.policy if turn else None, tool, args, decision))
    try:
        yield
    finally:
        _current.reset(token)


def redirect_refusal(url: str) -> str | None:
    """Why the running call may not follow a redirect to ``url``; None when it may.

    The hop is decided as a call of the same tool with ``url`` in place of the first
    one. It is refused when that verdict is stricter than the one the call ran under
    (an allowed fetch may not become one that would ask or be denied); outside a
    decided call nothing is refused here.
    """
    current = _current.get()
    if current is None or "url" not in current.args:
        return None
    hop = decide(current.policy, current.tool, {**current.args, "url": url})
    if RANK[hop.verdict] <= RANK[current.decision.verdict]:
        return None
    return f"policy: {hop.verdict} ({hop.words})"


def suggestion(tool: AgentTool, args: dict[str, Any]) -> str:
    """The "always allow" pattern an approval card offers for this call, e.g. ``bash: git status``.

    Empty for an MCP tool: its server may change what it does under the same name, so
    only an admin's rule may allow it.
    """
    if tool.source == "mcp":
        return ""
    if tool.name == "bash":
        words = simple_command(args.get("command", ""))
        return f"bash: {words}" if words else "bash"
    if tool.name in FILE_TOOLS:
        path = normalised_path(args.get("path", "."))
        return f"{tool.name}: {path}" if path else tool.name
    if tool.name == "web_fetch":
        from openprogram.programs.rule_conditions import fetch_host

        host = fetch_host(args.get("url"))
        return f"web_fetch: {host}" if host else "web_fetch"
    return tool.name
