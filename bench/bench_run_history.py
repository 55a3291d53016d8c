"""Run history: the explain trace each chat turn stores, full rows against the compact form.

With N deferred MCP-like tools registered (1 % of them denied, as a user's disables
would), one turn's trace is resolved once. The table shows the JSON bytes of the trace
as full rows and in ``chat_app.explain``'s compact form, what one turn writes in all
(before: the trace and the offered names on the run and again on its
``tools_resolved`` event; now: the compact trace and the names, on the run only),
and what compacting (every turn) and expanding (reading a run) cost.
"""

from __future__ import annotations

import json

from bench._util import median_seconds, print_table

__all__ = ["main"]

_SIZES = (100, 1_000, 5_000)


def _register(count: int) -> list[str]:
    from openprogram import function

    def remote() -> str:
        """A remote tool."""
        return "not called"

    names = [f"mcp__bench__tool_{i}" for i in range(count)]
    for name in names:
        function(name=name, defer=True)(remote)
    return names


def _measure(size: int) -> list[str]:
    from chat_app.explain import explain_compact, explain_expand
    from openprogram.programs.policy import resolve_tools
    from openprogram.programs.registry import restore_registry, snapshot_registry

    snapshot = snapshot_registry()
    try:
        names = _register(size)
        resolution = resolve_tools(only_available=True, deny=names[::100])
        rows = resolution.explain()
        tools = [t.name for t in resolution.tools if not t.defer]
        deferred = [t.name for t in resolution.tools if t.defer]
        compact = explain_compact(rows, tools=tools, deferred=deferred)
        compacting = median_seconds(
            lambda: explain_compact(rows, tools=tools, deferred=deferred), repeat=5
        )
        expanding = median_seconds(
            lambda: explain_expand(compact, tools=tools, deferred=deferred), repeat=5
        )
    finally:
        restore_registry(snapshot)
    full_bytes = len(json.dumps(rows))
    compact_bytes = len(json.dumps(compact))
    names_bytes = len(json.dumps(tools)) + len(json.dumps(deferred))
    return [
        f"{len(rows):,}",
        f"{full_bytes / 1024:,.1f} KB",
        f"{compact_bytes / 1024:,.1f} KB",
        f"{full_bytes / compact_bytes:,.0f}×",
        f"{2 * (full_bytes + names_bytes) / 1024:,.1f} KB",
        f"{(compact_bytes + names_bytes) / 1024:,.1f} KB",
        f"{compacting * 1000:.2f} ms",
        f"{expanding * 1000:.2f} ms",
    ]


def main() -> None:
    print_table(
        "Explain trace stored per turn (1 % of the deferred tools denied)",
        [
            "registered tools",
            "trace as rows",
            "compact trace",
            "smaller by",
            "turn wrote before",
            "turn writes now",
            "compact()",
            "expand()",
        ],
        [_measure(size) for size in _SIZES],
    )


if __name__ == "__main__":
    main()
