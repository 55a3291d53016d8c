"""The keyword index behind ``tool_search``: BM25F over a tool's name, parameters and text.

How a tool becomes a document (one bag of weighted terms per field):

1. ``name`` (weight 3): the tool name split on ``_``, ``.``, ``-``, camelCase and
   acronyms (``getHTTPResponse`` → get, http, response), plus each camelCase word whole
   (``ThinQ`` → thin, q, thinq), so a query may write it either way;
2. ``summary`` (weight 2): the description's first sentence, which usually says what
   the tool does (the rest tends to be details and caveats);
3. ``param`` (weight 2): every parameter name, nested objects and array items included;
4. ``text`` (weight 1): the rest of the description, every parameter description and
   enum value.

Words are runs of letters and digits in any script (a Korean or Spanish description is
searchable too); Chinese and Japanese, written without spaces, become overlapping
two-character terms. Terms are lower-cased and stemmed with the Snowball (Porter2)
English stemmer, so "issues", "issue" and "issuing" meet, and "connection" meets
"connected". Each field is length-normalised on its own (BM25F), the weighted term
frequencies are summed and saturated once, and an inverted index means a query only
touches tools that share a term with it.

A query first loses the words that carry no capability: grammar ("the", "could") and
the filler of a spoken request ("hi", "help", "want", "maybe"). A query word the tools
never use but one edit away from a word they do ("informaton", "liek") counts as that
word, at reduced weight. Words related to a query word in WordNet (its most common
sense's synonyms, direct hypernyms and derived forms: "compute" → calculate, "movie" →
film; ``related_words.txt``, made by ``tools/related_words.py``) count too, at a fifth of
their weight, so a request need not use the tool's own vocabulary.

The best hits are then re-ranked with a second, softer signal: the share of the
query's character 3- and 4-grams found in a tool's name and summary, so a query word
that is part of a compound ("flight" in ``flightbooker``) or another form of a word
still counts. Ranking diversifies: a hit whose weighted terms point the same way as a
better hit's (cosine ≥ 0.8) is moved behind the distinct hits, so five results are five
different capabilities rather than five copies of one tool from five servers.
"""

from __future__ import annotations

import math
import operator
import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import snowballstemmer

from openprogram.agent.types import AgentTool

__all__ = ["SearchIndex", "search_terms", "searchable_text"]

_FIELD_WEIGHTS = {"name": 3.0, "summary": 2.0, "param": 2.0, "text": 1.0}
_K1 = 1.2
_B = 0.75
_EXACT_NAME_BONUS = 100.0
_NEAR_DUPLICATE = 0.8
_RERANK_DEPTH = 60
_SCHEMA_DEPTH = 4
_TYPO_WEIGHT = 0.4
_TYPO_MIN_LENGTH = 4
_CACHED_INDEXES = 4
_NGRAM_WEIGHT = 0.5
_NGRAM_SIZES = (3, 4)
_RELATED_WEIGHT = 0.2
# A related word used by more than a tenth of the tools (and more than a few) is skipped:
# it adds little (its idf is low) and such long postings lists were most of a search's time.
_RELATED_MAX_SHARE = 0.1
_RELATED_MIN_POSTINGS = 64
_RELATED_WORDS = Path(__file__).with_name("related_words.txt")

_RUN = re.compile(r"[^\W_]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n")
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_ACRONYM = re.compile(r"([A-Z]+)([A-Z][a-z])")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_STOPWORD_TEXT = """a about after all also am an and any are as at be been before being both but by can
    could did do does doing during each for from further had has have having he her here
    him his how i if in into is it its just me more most my no nor not now of off on once
    only or other our out over own please same she should so some such than that the their
    them then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your"""
# The filler of a spoken request: it names no capability, yet a tool called "help" or
# "get_..." would otherwise win on it.
_FILLER_TEXT = """hi hey hello thanks thank help assist kindly want wanted need needs like love
    wonder wondering curious interested planning plan trying try think thought feel feeling
    believe maybe perhaps something anything someone somewhere really actually currently
    right today tell know let sure able possible going got get give show looking look"""
_QUERY_STOPWORDS = frozenset(_STOPWORD_TEXT.split()) | frozenset(_FILLER_TEXT.split())


_STEMMER = snowballstemmer.stemmer("english")
_stemmer_lock = threading.Lock()


@lru_cache(maxsize=1 << 16)
def _stem(word: str) -> str:
    """The Porter2 stem (cached per word: vocabularies repeat, and stemming is the costly
    step of tokenising). The stemmer object keeps state per call, hence the lock."""
    with _stemmer_lock:
        return _STEMMER.stemWord(word)


@lru_cache(maxsize=1 << 16)
def _run_words(run: str) -> tuple[str, ...]:
    """The lower-cased words of one run of letters and digits (cached: vocabularies repeat)."""
    if _CJK.search(run):
        words: list[str] = []
        position = 0
        for match in _CJK.finditer(run):
            if match.start() > position:
                words.extend(_run_words(run[position : match.start()]))
            chars = match.group()
            words.extend(chars[i : i + 2] for i in range(max(1, len(chars) - 1)))
            position = match.end()
        if position < len(run):
            words.extend(_run_words(run[position:]))
        return tuple(words)
    if run.islower() or run.isupper() or run.isdigit():
        return (run.lower(),)
    return tuple(_ACRONYM.sub(r"\1 \2", _CAMEL.sub(r"\1 \2", run)).lower().split())


def _words(text: str, *, compounds: bool = False) -> list[str]:
    """``compounds`` also keeps each camelCase word whole (the index side: a query may
    write "ThinQ" as "thinq", and "getWeather" still splits on the query side)."""
    if not _CJK.search(text) and not _CAMEL.search(text) and not _ACRONYM.search(text):
        return _RUN.findall(text.lower())  # plain text, the common case: one pass in C
    words: list[str] = []
    for run in _RUN.findall(text):
        parts = _run_words(run)
        words.extend(parts)
        if compounds and len(parts) > 1 and run.isascii():
            words.append(run.lower())
    return words


def _query_words(text: str) -> list[str]:
    words = _words(text)
    return [w for w in words if w not in _QUERY_STOPWORDS] or words


def search_terms(text: str, *, query: bool = False) -> list[str]:
    """Split, lower-case and stem ``text``; a query also loses its stop words."""
    return [_stem(word) for word in (_query_words(text) if query else _words(text))]


@lru_cache(maxsize=1)
def _related_words() -> dict[str, str]:
    """Stem → the stems of its related words (WordNet), space-separated: split only when a
    query uses the stem, so reading the 40,000 entries stays cheap (read once, by the
    first index build)."""
    related: dict[str, str] = {}
    with _RELATED_WORDS.open(encoding="utf-8") as lines:
        for line in lines:
            if line[0] != "#":
                stem, _, words = line.partition("\t")
                related[stem] = words
    return related


@lru_cache(maxsize=1 << 16)
def _word_ngrams(word: str) -> frozenset[str]:
    """Character 3- and 4-grams of one word, its ends marked (``#flight#``); cached, since
    words repeat across tools and making the grams is most of a cold re-rank's cost."""
    marked = f"#{word}#"
    return frozenset(
        marked[i : i + size] for size in _NGRAM_SIZES for i in range(len(marked) - size + 1)
    )


def _char_ngrams(words: Sequence[str]) -> frozenset[str]:
    return frozenset().union(*map(_word_ngrams, words))


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


def _fields(tool: AgentTool, surface: dict[str, str]) -> dict[str, list[str]]:
    """Stemmed terms per field; ``surface`` collects every word seen → its stem."""
    fields: dict[str, list[str]] = {name: [] for name in _FIELD_WEIGHTS}
    summary, *rest = _SENTENCE_END.split(tool.description or "", maxsplit=1)
    texts = [("name", tool.name), ("summary", summary), ("text", " ".join(rest))]
    texts.extend(_schema_fields(tool.parameters))
    for name, text in texts:
        words = _words(text, compounds=True)
        for word in words:
            if word not in surface:
                surface[word] = _stem(word)
        fields[name].extend(map(surface.__getitem__, words))
    return fields


def _deletions(word: str) -> Iterator[str]:
    return (word[:i] + word[i + 1 :] for i in range(len(word)))


@dataclass
class SearchIndex:
    """An inverted index over one set of tools; build once per tool set, rank many times."""

    tools: list[AgentTool]
    postings: dict[str, list[tuple[int, float]]]
    idf: dict[str, float]
    vectors: list[dict[str, float]]
    """Per tool: term → weighted frequency as a unit vector (near-duplicate detection)."""
    by_name: dict[str, int]
    surface: dict[str, str]
    _typos: dict[str, set[str]] | None = field(default=None, repr=False)
    _grams: dict[int, frozenset[str]] = field(default_factory=dict, repr=False)
    """Per tool position: its name and summary's character n-grams, made when the tool
    first reaches a re-rank (most tools never do, so the index does not pay for them)."""

    @classmethod
    def build(cls, tools: Sequence[AgentTool]) -> SearchIndex:
        _related_words()  # read once per process here, not in a turn's first search
        surface: dict[str, str] = {}
        per_tool = [_fields(tool, surface) for tool in tools]
        count = len(per_tool) or 1
        average = {
            name: (sum(len(fields[name]) for fields in per_tool) / count) or 1.0
            for name in _FIELD_WEIGHTS
        }
        postings: dict[str, list[tuple[int, float]]] = {}
        vectors = []
        for position, fields in enumerate(per_tool):
            weighted: dict[str, float] = {}
            for name, weight in _FIELD_WEIGHTS.items():
                terms = fields[name]
                scale = weight / (1 - _B + _B * len(terms) / average[name])
                for term, tf in Counter(terms).items():
                    weighted[term] = weighted.get(term, 0.0) + tf * scale
            for term, tf in weighted.items():
                postings.setdefault(term, []).append((position, tf))
            vectors.append(weighted)
        idf = {
            term: math.log(1 + (count - len(hits) + 0.5) / (len(hits) + 0.5))
            for term, hits in postings.items()
        }
        for vector in vectors:  # unit length, so a dot product is the cosine
            norm = math.sqrt(sum(v * v for v in vector.values())) or 1.0
            for term in vector:
                vector[term] /= norm
        by_name = {tool.name.lower(): position for position, tool in enumerate(tools)}
        return cls(list(tools), postings, idf, vectors, by_name, surface)

    @classmethod
    def for_tools(cls, tools: Sequence[AgentTool]) -> SearchIndex:
        """The index over ``tools``, reused while the same tool objects come back (turn after
        turn). Keyed by identity: a registered tool is never edited in place (a changed
        MCP tool list or package reload registers new objects)."""
        key = tuple(map(id, tools))
        with _cache_lock:
            index = _cache.get(key)
            if index is not None:
                _cache.move_to_end(key)
                return index
        # The entry keeps the tools alive, so their ids cannot be reused while it is cached.
        index = cls.build(tools)
        with _cache_lock:
            _cache[key] = index
            while len(_cache) > _CACHED_INDEXES:
                _cache.popitem(last=False)
        return index

    def rank(self, query: str, limit: int) -> list[AgentTool]:
        weights = self._query_weights(query)
        scores: dict[int, float] = {}
        for term, idf in weights.items():
            for position, tf in self.postings[term]:
                scores[position] = scores.get(position, 0.0) + idf * tf * (_K1 + 1) / (tf + _K1)
        exact = self.by_name.get(query.strip().lower())
        if exact is not None:
            scores[exact] = scores.get(exact, 0.0) + _EXACT_NAME_BONUS
        ranked = sorted(scores, key=scores.__getitem__, reverse=True)[: max(limit, _RERANK_DEPTH)]
        ranked = self._reranked(ranked, scores, _char_ngrams(_query_words(query)))
        return [self.tools[p] for p in self._diversified(ranked, limit)]

    def _reranked(
        self, ranked: list[int], scores: dict[int, float], query_grams: frozenset[str]
    ) -> list[int]:
        """``ranked`` re-ordered by score (relative to the best) plus the share of the
        query's character n-grams in each tool's name and summary."""
        if not ranked or not query_grams:
            return ranked
        best = scores[ranked[0]] or 1.0
        combined = {
            position: scores[position] / best
            + _NGRAM_WEIGHT * len(query_grams & self._tool_grams(position)) / len(query_grams)
            for position in ranked
        }
        return sorted(ranked, key=combined.__getitem__, reverse=True)

    def _tool_grams(self, position: int) -> frozenset[str]:
        grams = self._grams.get(position)
        if grams is None:
            tool = self.tools[position]
            summary = _SENTENCE_END.split(tool.description or "", maxsplit=1)[0]
            grams = self._grams[position] = _char_ngrams(_words(f"{tool.name} {summary}"))
        return grams

    def _query_weights(self, query: str) -> dict[str, float]:
        """Query term → idf; an unknown word one edit from known ones counts as them, and a
        word related to a query word counts as itself, both at reduced weight."""
        weights: dict[str, float] = {}
        words = _query_words(query)
        terms = [_stem(word) for word in words]
        for word, term in zip(words, terms, strict=True):
            if term in self.idf:
                weights[term] = self.idf[term]
            elif len(word) >= _TYPO_MIN_LENGTH and not word.isdigit():
                for near in self._one_edit_away(word):
                    weights.setdefault(near, _TYPO_WEIGHT * self.idf[near])
        related = _related_words()
        longest = max(_RELATED_MIN_POSTINGS, _RELATED_MAX_SHARE * len(self.tools))
        for term in terms:
            # A related word counts at most a fifth of the word it stands for: "post" for
            # "send" must not outweigh "send" itself when "send" is the commoner word.
            cap = self.idf.get(term, math.inf)
            for other in related.get(term, "").split():
                hits = self.postings.get(other)
                if hits is not None and len(hits) <= longest and other not in weights:
                    weights[other] = _RELATED_WEIGHT * min(self.idf[other], cap)
        return weights

    def _one_edit_away(self, word: str) -> set[str]:
        """Stems of indexed words one insertion, deletion, substitution or swap from ``word``.

        Symmetric deletion: two words are that close when one equals the other with a
        letter deleted, or both share a one-letter deletion. Built on the first unknown
        query word, not with the index, since most queries never need it.
        """
        if self._typos is None:
            typos: dict[str, set[str]] = {}
            for known in self.surface:
                if len(known) >= _TYPO_MIN_LENGTH and not known.isdigit():
                    typos.setdefault(known, set()).add(known)
                    for variant in _deletions(known):
                        typos.setdefault(variant, set()).add(known)
            self._typos = typos
        found = set(self._typos.get(word, ()))
        for variant in _deletions(word):
            found |= self._typos.get(variant, set())
        return {self.surface[known] for known in found}

    def _diversified(self, ranked: list[int], limit: int) -> list[int]:
        """The first ``limit`` of ``ranked`` with near-duplicates of better hits moved back."""
        distinct: list[int] = []
        repeats: list[int] = []
        for position in ranked:
            if len(distinct) == limit:
                break
            if any(self._similar(position, kept) for kept in distinct):
                repeats.append(position)
            else:
                distinct.append(position)
        return (distinct + repeats)[:limit]

    def _similar(self, a: int, b: int) -> bool:
        first, second = self.vectors[a], self.vectors[b]
        shared = first.keys() & second.keys()
        dot = sum(
            map(operator.mul, map(first.__getitem__, shared), map(second.__getitem__, shared))
        )
        return dot >= _NEAR_DUPLICATE


_cache: OrderedDict[tuple[int, ...], SearchIndex] = OrderedDict()
_cache_lock = threading.Lock()
