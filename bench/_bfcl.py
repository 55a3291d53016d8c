"""The BFCL v4 data sets, read from the installed ``bfcl-eval`` package: the "live"
categories (held-out test set) and the non-live ones (development set).

``bfcl-eval`` is installed data-only (``--no-deps``, pinned with its hash in
``bench/requirements-data.txt``), so nothing here imports it: the package folder is
found with ``importlib.util.find_spec``, which does not execute the package. Nothing
is downloaded at run time.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "CATEGORIES",
    "DEV_CATEGORIES",
    "BfclFunction",
    "BfclQuestion",
    "keyword_query",
    "load_dev",
    "load_live",
]

CATEGORIES = ("simple", "multiple", "parallel", "parallel_multiple")
"""The live categories (user-contributed questions): the held-out test set we report."""
DEV_CATEGORIES = (
    "simple_python",
    "simple_java",
    "simple_javascript",
    "multiple",
    "parallel",
    "parallel_multiple",
)
"""The non-live categories (written by BFCL's authors): the development set every ranking
parameter is chosen on, so the reported live numbers are not fitted to."""

# Words a model drops when it turns a request into a search query. One list, applied the
# same way for every search method compared.
_STOPWORD_TEXT = """a about above after again all also am an and any are as at be been before being
    below between both but by can could did do does doing down during each few for from
    further get give had has have having he her here hers him his how i if in into is it
    its just know let like me more most my need no nor not now of off on once only or
    other our out over own please same she should show so some such tell than that the
    their them then there these they this those through to too under until up use very
    want was we were what when where which while who whom why will with would you your"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_KEYWORDS_PER_QUERY = 6


@dataclass(frozen=True)
class BfclFunction:
    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class BfclQuestion:
    id: str
    category: str
    text: str
    expected: frozenset[str]


def _data_dir() -> Path:
    spec = importlib.util.find_spec("bfcl_eval")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "bfcl-eval is not installed: `make bench` installs it from bench/requirements-data.txt"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def _lines(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


# BFCL writes its schemas in a Python-flavoured dialect; the registry takes JSON Schema.
# The same mapping BFCL applies before sending them to OpenAI-style models.
_JSON_SCHEMA_TYPES = {"dict": "object", "float": "number", "tuple": "array"}


def _json_schema(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_json_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    converted = {key: _json_schema(value) for key, value in schema.items()}
    kind = schema.get("type")
    if kind == "any":
        del converted["type"]
    elif isinstance(kind, str):
        converted["type"] = _JSON_SCHEMA_TYPES.get(kind, kind)
    return converted


def _question_text(entry: dict[str, Any]) -> str:
    turns = entry["question"]
    first_turn = turns[0] if turns and isinstance(turns[0], list) else turns
    return " ".join(m["content"] for m in first_turn if m.get("role") == "user").strip()


def load_live() -> tuple[list[BfclFunction], list[BfclQuestion]]:
    """Every distinct function definition of the four live categories, and their questions."""
    return _load(f"live_{category}" for category in CATEGORIES)


def load_dev() -> tuple[list[BfclFunction], list[BfclQuestion]]:
    """The same for the non-live categories (the development set)."""
    return _load(DEV_CATEGORIES)


def _load(files: Iterable[str]) -> tuple[list[BfclFunction], list[BfclQuestion]]:
    data = _data_dir()
    functions: dict[tuple[str, str, str], BfclFunction] = {}
    questions: list[BfclQuestion] = []
    for category in files:
        answers = {
            a["id"]: a["ground_truth"]
            for a in _lines(data / "possible_answer" / f"BFCL_v4_{category}.json")
        }
        for entry in _lines(data / f"BFCL_v4_{category}.json"):
            for spec in entry["function"]:
                parameters = _json_schema(spec.get("parameters") or {"type": "dict"})
                key = (
                    spec["name"],
                    spec.get("description", ""),
                    json.dumps(parameters, sort_keys=True),
                )
                functions.setdefault(
                    key, BfclFunction(spec["name"], spec.get("description", ""), parameters)
                )
            expected = frozenset(name for call in answers[entry["id"]] for name in call)
            questions.append(BfclQuestion(entry["id"], category, _question_text(entry), expected))
    return list(functions.values()), questions


def keyword_query(text: str) -> str:
    """The short query a model would write: the first content words of the request."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    kept = list(dict.fromkeys(w for w in words if len(w) > 2 and w not in _STOPWORDS))
    return " ".join(kept[:_KEYWORDS_PER_QUERY])
