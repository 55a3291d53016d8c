"""The explain trace, stored compactly in run history and expanded back for reading.

The dispatcher explains every turn with one row per registered tool; with thousands
of MCP tools that is a large JSON write per turn, and most rows only say "offered".
A run already stores the offered names (``Run.tools``) and the offered deferred
names (``Run.deferred``), so the compact form keeps only what those lack:

- ``not_offered``: the rejected tools grouped by (layer, reason), in trace order —
  every "why not offered" survives, each reason written once, with its words for people;
- ``loaded``: deferred tools whose schema was already loaded;
- ``deferred_not_offered``: rejected tools marked ``defer`` (the rows keep that flag);
- ``sources``: tool names by source, the most common source (``default_source``)
  left implicit;
- ``counts``: registered / offered / deferred / not offered, and not offered per layer.

:func:`explain_expand` rebuilds one row per tool (offered ones first, then the
rejected ones group by group) with the same keys the dispatcher's rows have.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, TypedDict

from openprogram.programs.explain_words import plain_reason

__all__ = ["CompactExplain", "NotOfferedGroup", "explain_compact", "explain_expand"]

_FORMAT = "compact-v1"


class NotOfferedGroup(TypedDict, total=False):
    layer: str | None
    reason: str
    names: list[str]
    words: str
    """The reason for people (``explain_words.plain_reason``); older runs stored none."""


class CompactExplain(TypedDict):
    format: str
    not_offered: list[NotOfferedGroup]
    loaded: list[str]
    deferred_not_offered: list[str]
    default_source: str
    sources: dict[str, list[str]]
    counts: dict[str, Any]


def _is_compact(explain: Any) -> bool:
    return isinstance(explain, dict) and explain.get("format") == _FORMAT


def explain_compact(
    explain: Sequence[dict[str, Any]] | CompactExplain,
    *,
    tools: Iterable[str],
    deferred: Iterable[str],
) -> CompactExplain:
    """The compact form of the dispatcher's rows (already compact: returned as is)."""
    if _is_compact(explain):
        return explain  # type: ignore[return-value]
    rows = list(explain)  # type: ignore[arg-type]
    groups: dict[tuple[str | None, str], list[str]] = {}
    by_source: dict[str, list[str]] = {}
    loaded: list[str] = []
    deferred_not_offered: list[str] = []
    for row in rows:
        name = str(row.get("name", ""))
        by_source.setdefault(str(row.get("source") or "builtin"), []).append(name)
        if row.get("loaded"):
            loaded.append(name)
        if not row.get("offered"):
            groups.setdefault((row.get("layer"), str(row.get("reason", ""))), []).append(name)
            if row.get("deferred"):
                deferred_not_offered.append(name)
    default_source = max(by_source, key=lambda s: len(by_source[s])) if by_source else "builtin"
    not_offered: list[NotOfferedGroup] = [
        {"layer": layer, "reason": reason, "names": names, "words": plain_reason(layer, reason)}
        for (layer, reason), names in groups.items()
    ]
    per_layer = Counter[str]()
    for group in not_offered:
        per_layer[str(group["layer"])] += len(group["names"])
    offered, offered_deferred = list(tools), list(deferred)
    return {
        "format": _FORMAT,
        "not_offered": not_offered,
        "loaded": loaded,
        "deferred_not_offered": deferred_not_offered,
        "default_source": default_source,
        "sources": {s: names for s, names in by_source.items() if s != default_source},
        "counts": {
            "registered": len(rows),
            "offered": len(offered) + len(offered_deferred),
            "deferred": len(offered_deferred),
            "not_offered": sum(per_layer.values()),
            "not_offered_by_layer": dict(per_layer),
        },
    }


def _summary(offered: bool, deferred: bool, layer: str | None, reason: str) -> str:
    if offered:
        return "offered (deferred)" if deferred else "offered"
    return f"{layer}: {reason}"


def explain_expand(
    explain: CompactExplain | list[dict[str, Any]] | dict[str, Any],
    *,
    tools: Iterable[str],
    deferred: Iterable[str],
) -> list[dict[str, Any]]:
    """One row per registered tool, as the dispatcher wrote them (older runs stored rows)."""
    if isinstance(explain, list):
        return explain
    if not _is_compact(explain):
        return []
    source_of = {name: source for source, names in explain["sources"].items() for name in names}
    default_source = explain["default_source"]
    loaded = set(explain["loaded"])
    rejected_deferred = set(explain["deferred_not_offered"])
    rows: list[dict[str, Any]] = []

    def add(name: str, offered: bool, is_deferred: bool, layer: str | None, reason: str) -> None:
        rows.append(
            {
                "name": name,
                "offered": offered,
                "layer": layer,
                "reason": reason,
                "deferred": is_deferred,
                "source": source_of.get(name, default_source),
                "loaded": name in loaded,
                "summary": _summary(offered, is_deferred, layer, reason),
            }
        )

    for name in tools:
        add(name, True, False, None, "")
    for name in deferred:
        add(name, True, True, None, "")
    for group in explain["not_offered"]:
        for name in group["names"]:
            add(name, False, name in rejected_deferred, group["layer"], group["reason"])
    return rows
