"""The keyword index behind ``tool_search``: BM25F over a tool's name, parameters and text.

How a tool becomes a document (one bag of weighted terms per field):

1. ``name`` (weight 3): the tool name split on ``_``, ``.``, ``-``, camelCase and
   acronyms (``getHTTPResponse`` → get, http, response);
2. ``param`` (weight 2): every parameter name, nested objects and array items included;
3. ``text`` (weight 1): the description, every parameter description and enum value.

Terms are lower-cased and lightly stemmed (plural, -ing, -ed, -ation, ...), so "issues",
"issue" and "issuing" meet. Each field is length-normalised on its own (BM25F), the
weighted term frequencies are summed and saturated once, and an inverted index means a
query only touches tools that share a term with it. Query words that carry no meaning
("please", "could", "the") are dropped before scoring.

Ranking diversifies: a hit whose vocabulary overlaps a better hit by half or more
(Jaccard over term sets) is moved behind the distinct hits, so five results are five
different capabilities rather than five copies of one tool from five servers.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from openprogram.agent.types import AgentTool

__all__ = ["SearchIndex", "search_terms", "searchable_text"]

_FIELD_WEIGHTS = {"name": 3.0, "param": 2.0, "text": 1.0}
_K1 = 1.2
_B = 0.75
_EXACT_NAME_BONUS = 100.0
_NEAR_DUPLICATE = 0.5
_RERANK_DEPTH = 60
_SCHEMA_DEPTH = 4

_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_ACRONYM = re.compile(r"([A-Z]+)([A-Z][a-z])")
_WORD = re.compile(r"[a-z0-9]+")
_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "es", "ed", "s", "ly")
_SIBILANT_ENDINGS = ("ses", "xes", "zes", "ches", "shes")
_STOPWORD_TEXT = """a about after all also am an and any are as at be been before being both but by can
    could did do does doing during each for from further had has have having he her here
    him his how i if in into is it its just me more most my no nor not now of off on once
    only or other our out over own please same she should so some such than that the their
    them then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your"""
_QUERY_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def _stem(word: str) -> str:
    """Strip one inflection, then a final "e", so create/created/creating/creates meet."""
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            if suffix in ("ies", "ied"):
                word = word[: -len(suffix)] + "y"
            elif suffix == "es" and not word.endswith(_SIBILANT_ENDINGS):
                word = word[:-1]
            elif not (suffix == "s" and word.endswith(("ss", "us", "is"))):
                word = word[: -len(suffix)]
            break
    return word[:-1] if len(word) > 3 and word.endswith("e") else word


def search_terms(text: str, *, query: bool = False) -> list[str]:
    """Split, lower-case and stem ``text``; a query also loses its stop words."""
    spaced = _ACRONYM.sub(r"\1 \2", _CAMEL.sub(r"\1 \2", text))
    words = _WORD.findall(spaced.lower())
    if query:
        words = [w for w in words if w not in _QUERY_STOPWORDS]
    return [_stem(w) for w in words]


def _schema_fields(schema: Any, depth: int = 0) -> Iterator[tuple[str, str]]:
    """(field, text) pairs for every parameter name, description and enum value."""
    if not isinstance(schema, dict) or depth > _SCHEMA_DEPTH:
        return
    if isinstance(schema.get("enum"), list):
        yield "text", " ".join(str(value) for value in schema["enum"])
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name, spec in properties.items():
            yield "param", str(name)
            if isinstance(spec, dict):
                yield "text", str(spec.get("description") or "")
                yield from _schema_fields(spec, depth + 1)
    if isinstance(schema.get("items"), dict):
        yield from _schema_fields(schema["items"], depth + 1)


def searchable_text(tool: AgentTool) -> str:
    """Everything the index reads of a tool, as one text (benchmarks compare on it)."""
    parts = [tool.name, tool.description or ""]
    parts.extend(text for _, text in _schema_fields(tool.parameters))
    return " ".join(parts)


def _fields(tool: AgentTool) -> dict[str, list[str]]:
    fields: dict[str, list[str]] = {"name": search_terms(tool.name), "param": [], "text": []}
    fields["text"].extend(search_terms(tool.description or ""))
    for field, text in _schema_fields(tool.parameters):
        fields[field].extend(search_terms(text))
    return fields


@dataclass
class SearchIndex:
    """An inverted index over one set of tools; build once per tool set, rank many times."""

    tools: list[AgentTool]
    postings: dict[str, list[tuple[int, float]]]
    idf: dict[str, float]
    vocabularies: list[frozenset[str]]
    by_name: dict[str, int]

    @classmethod
    def build(cls, tools: Sequence[AgentTool]) -> SearchIndex:
        per_tool = [_fields(tool) for tool in tools]
        count = len(per_tool) or 1
        average = {
            field: (sum(len(f[field]) for f in per_tool) / count) or 1.0 for field in _FIELD_WEIGHTS
        }
        postings: dict[str, list[tuple[int, float]]] = {}
        vocabularies = []
        for position, fields in enumerate(per_tool):
            weighted: Counter[str] = Counter()
            for field, weight in _FIELD_WEIGHTS.items():
                terms = fields[field]
                norm = 1 - _B + _B * len(terms) / average[field]
                for term, tf in Counter(terms).items():
                    weighted[term] += weight * tf / norm
            for term, tf in weighted.items():
                postings.setdefault(term, []).append((position, tf))
            vocabularies.append(frozenset(weighted))
        idf = {
            term: math.log(1 + (count - len(hits) + 0.5) / (len(hits) + 0.5))
            for term, hits in postings.items()
        }
        by_name = {tool.name.lower(): position for position, tool in enumerate(tools)}
        return cls(list(tools), postings, idf, vocabularies, by_name)

    def rank(self, query: str, limit: int) -> list[AgentTool]:
        scores: dict[int, float] = {}
        for term in set(search_terms(query, query=True)):
            idf = self.idf.get(term)
            if idf is None:
                continue
            for position, tf in self.postings[term]:
                scores[position] = scores.get(position, 0.0) + idf * tf * (_K1 + 1) / (tf + _K1)
        exact = self.by_name.get(query.strip().lower())
        if exact is not None:
            scores[exact] = scores.get(exact, 0.0) + _EXACT_NAME_BONUS
        ranked = sorted(scores, key=lambda p: (-scores[p], p))[: max(limit, _RERANK_DEPTH)]
        return [self.tools[p] for p in self._diversified(ranked)[:limit]]

    def _diversified(self, ranked: list[int]) -> list[int]:
        distinct: list[int] = []
        repeats: list[int] = []
        for position in ranked:
            words = self.vocabularies[position]
            if any(
                _overlap(words, self.vocabularies[kept]) >= _NEAR_DUPLICATE for kept in distinct
            ):
                repeats.append(position)
            else:
                distinct.append(position)
        return distinct + repeats


def _overlap(a: frozenset[str], b: frozenset[str]) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 1.0
