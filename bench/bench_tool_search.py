"""Does ``tool_search`` find the deferred tool the model needs? (issue #18, part 2)

Method. Every distinct function definition of the BFCL v4 live categories (simple,
multiple, parallel, parallel_multiple; read from the installed ``bfcl-eval``
package) is registered as a deferred tool in one registry. The live categories are the
held-out test set; the non-live ones (simple_python/java/javascript, multiple, parallel,
parallel_multiple: ``bench._bfcl.load_dev``) are the development set, scored the same
way in a pool of their own, on which ranking parameters are to be chosen. For each question we
search twice: with the question text as asked, and with the short keyword query a
model would write (``bench._bfcl.keyword_query``: its first six content words, the
same derivation for every method). A hit is a loaded tool whose BFCL name is one of
the question's ground-truth functions (several definitions share a name; any of them
counts). Scores: recall@1 and recall@5 (share of a question's ground-truth functions
in the top k, averaged over questions) and MRR (1 / rank of the first hit, 0 past 20).

Methods compared on the same tool texts (name, description, parameter names, parameter
descriptions and enum values, nested ones included: ``searchable_text``): OpenProgram's ``tool_search`` (called through its
``execute``, as the model calls it) and a BM25 baseline (``rank_bm25.BM25Okapi`` over
word tokens of that text). Then, over 5,000 deferred tools: the index build (paid once
per tool set: later turns with the same tool objects reuse it), the median and p95
latency of one keyword search (ranking alone, through ``execute`` inside a turn, and as
the first search of a new turn), and the index's memory. Targets: recall@5 at least 10
points above the baseline on the same queries; a search over 5,000 tools under 5 ms.
"""

from __future__ import annotations

import asyncio
import re
import statistics
import time
import tracemalloc
from collections.abc import Callable, Sequence

from bench._bfcl import BfclFunction, BfclQuestion, keyword_query, load_dev, load_live
from bench._util import print_table
from openprogram.agent.types import AgentTool
from openprogram.programs import registry
from openprogram.programs._search_index import SearchIndex, searchable_text
from openprogram.programs.deferred import install_loaded_deferred, tool_search

__all__ = ["main"]

_DEPTH = 20
_TIMING_TOOLS = 5_000
_TIMING_QUERIES = 300
_BUILDS = 3

Ranker = Callable[[str], list[str]]


def _as_tools(
    functions: Sequence[BfclFunction], copies: int = 1
) -> dict[str, tuple[AgentTool, str]]:
    """Registry name → (deferred tool, BFCL name); later definitions of a name get a suffix."""
    tools: dict[str, tuple[AgentTool, str]] = {}
    for copy in range(copies):
        for function in functions:
            base = function.name if copy == 0 else f"{function.name}_copy{copy}"
            name, n = base, 1
            while name in tools or name == tool_search.name:
                n += 1
                name = f"{base}__v{n}"
            tool = AgentTool(
                name=name,
                description=function.description,
                parameters=function.parameters,
                source="mcp",
                defer=True,
            )
            tools[name] = (tool, function.name)
    return tools


def _openprogram_ranker(tools: dict[str, tuple[AgentTool, str]]) -> Ranker:
    for tool, _ in tools.values():
        registry.register(tool)

    def rank(query: str) -> list[str]:
        result = asyncio.run(tool_search.execute("bench", {"query": query, "max_results": _DEPTH}))
        return [tools[name][1] for name in (result.details or {}).get("loaded", [])]

    return rank


def _bm25_ranker(tools: dict[str, tuple[AgentTool, str]]) -> Ranker:
    from rank_bm25 import BM25Okapi

    names = list(tools)
    tokenize = lambda text: re.findall(r"\w+", text.lower())  # noqa: E731
    index = BM25Okapi([tokenize(searchable_text(tools[name][0])) for name in names])

    def rank(query: str) -> list[str]:
        scores = index.get_scores(tokenize(query))
        order = sorted(range(len(names)), key=lambda i: -scores[i])[:_DEPTH]
        return [tools[names[i]][1] for i in order if scores[i] > 0]

    return rank


def _score(
    rank: Ranker, questions: Sequence[BfclQuestion], query_of: Callable[[str], str]
) -> list[str]:
    at1 = at5 = reciprocal = 0.0
    for question in questions:
        ranked = rank(query_of(question.text))
        expected = question.expected
        at1 += len(expected & set(ranked[:1])) / len(expected)
        at5 += len(expected & set(ranked[:5])) / len(expected)
        first = next((i for i, name in enumerate(ranked) if name in expected), None)
        reciprocal += 0.0 if first is None else 1.0 / (first + 1)
    n = len(questions)
    return [f"{100 * at1 / n:.1f} %", f"{100 * at5 / n:.1f} %", f"{reciprocal / n:.3f}"]


def _quality_rows(
    functions: list[BfclFunction], questions: list[BfclQuestion]
) -> list[list[object]]:
    tools = _as_tools(functions)
    snapshot = registry.snapshot_registry()
    registry.reset_registry()
    registry.register(tool_search)
    try:
        ours = _openprogram_ranker(tools)
        baseline = _bm25_ranker(tools)
        rows: list[list[object]] = []
        for label, query_of in (("question text", lambda t: t), ("keyword query", keyword_query)):
            rows.append(
                [label, "BM25 baseline (rank-bm25)", *_score(baseline, questions, query_of)]
            )
            rows.append([label, "OpenProgram tool_search", *_score(ours, questions, query_of)])
        return rows
    finally:
        registry.restore_registry(snapshot)


def _timing_rows(
    functions: list[BfclFunction], questions: list[BfclQuestion]
) -> list[list[object]]:
    copies = -(-_TIMING_TOOLS // len(functions))
    tools = dict(list(_as_tools(functions, copies).items())[:_TIMING_TOOLS])
    deferred = [tool for tool, _ in tools.values()]
    queries = [keyword_query(q.text) for q in questions[:_TIMING_QUERIES]]
    snapshot = registry.snapshot_registry()
    registry.reset_registry()
    registry.register(tool_search)
    try:
        for tool in deferred:
            registry.register(tool)
        builds = []
        for _ in range(_BUILDS):
            started = time.perf_counter()
            index = SearchIndex.build(deferred)
            builds.append(time.perf_counter() - started)
        rows = [_latency_row(len(deferred), "index build (a tool set not seen before)", "", builds)]
        # Every later turn's pool is the same tool objects: its first search reuses the index.
        SearchIndex.for_tools(deferred)

        async def search_all(limit: int, new_turn: bool, direct: bool) -> list[float]:
            install_loaded_deferred(deferred)
            await tool_search.execute("warm", {"query": "warm up the index"})
            samples = []
            for query in queries:
                if new_turn:
                    install_loaded_deferred(deferred)
                started = time.perf_counter()
                if direct:
                    index.rank(query, limit)
                else:
                    await tool_search.execute("bench", {"query": query, "max_results": limit})
                samples.append(time.perf_counter() - started)
            return samples

        for label, limit, new_turn, direct in (
            ("ranking only (SearchIndex.rank)", 5, False, True),
            ("tool_search.execute", 5, False, False),
            ("tool_search.execute", 20, False, False),
            ("tool_search.execute, first search of a new turn", 5, True, False),
        ):
            samples = asyncio.run(search_all(limit, new_turn, direct))
            rows.append(_latency_row(len(deferred), label, limit, samples))
        tracemalloc.start()
        kept = SearchIndex.build(deferred)
        memory = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        del kept
        rows.append([f"{len(deferred):,}", f"index memory: {memory / 2**20:.1f} MiB", "", "", ""])
        return rows
    finally:
        registry.restore_registry(snapshot)


def _latency_row(tools: int, label: str, limit: object, samples: list[float]) -> list[object]:
    samples = sorted(samples)
    p95 = samples[int(0.95 * (len(samples) - 1))]
    return [
        f"{tools:,}",
        label,
        limit,
        f"{statistics.median(samples) * 1000:.2f}",
        f"{p95 * 1000:.2f}",
    ]


def _describe(label: str, functions: list[BfclFunction], questions: list[BfclQuestion]) -> str:
    return (
        f"{label}: {len(questions):,} questions, {len(functions):,} distinct function "
        f"definitions ({len({f.name for f in functions}):,} distinct names), all deferred"
    )


def main() -> None:
    try:
        functions, questions = load_live()
        dev_functions, dev_questions = load_dev()
    except ModuleNotFoundError as missing:
        print(f"(tool_search quality skipped: {missing})\n")
        return
    print(_describe("BFCL v4 live (held-out test set)", functions, questions))
    print(_describe("BFCL v4 non-live (development set)", dev_functions, dev_questions) + "\n")
    print_table(
        "tool_search retrieval quality on BFCL v4 live (simple, multiple, parallel, parallel_multiple)",
        ["query", "method", "recall@1", "recall@5", "MRR"],
        _quality_rows(functions, questions),
    )
    print_table(
        "tool_search retrieval quality on the development set: BFCL v4 non-live (simple "
        "python/java/javascript, multiple, parallel, parallel_multiple)",
        ["query", "method", "recall@1", "recall@5", "MRR"],
        _quality_rows(dev_functions, dev_questions),
    )
    print_table(
        "tool_search latency: one keyword query over deferred tools",
        ["deferred tools", "what", "max_results", "median ms", "p95 ms"],
        _timing_rows(functions, questions),
    )
