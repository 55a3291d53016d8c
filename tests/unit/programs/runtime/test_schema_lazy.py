"""The lazy path: plain signatures get their schema without a model, built on first use."""

from __future__ import annotations

import json
import threading
from typing import Any, Literal

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from openprogram.programs.decorator import build_function_tool
from openprogram.programs.schema import (
    _arguments_model,
    _plain_schema,
    analyse_signature,
    clean_json_schema,
)

_PLAIN_ANNOTATIONS: list[Any] = [
    str,
    int,
    float,
    bool,
    Any,
    str | None,
    int | None,
    list[str],
    list[int],
    dict[str, int],
    dict[str, list[str]],
    set[str],
    tuple[int, ...],
    tuple[str, int],
    Literal["asc", "desc"],
    Literal[1, 2, 3],
    Literal["only"],
    list[Literal["a", "b"]] | None,
    int | str,
]
_DEFAULTS = st.one_of(
    st.just(...),
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
_FIELD = st.tuples(
    st.sampled_from(_PLAIN_ANNOTATIONS), _DEFAULTS, st.one_of(st.just(""), st.text(max_size=30))
)


def _eager_schema(fields: dict[str, Any]) -> dict[str, Any]:
    return clean_json_schema(_arguments_model("t", fields).model_json_schema())


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True), _FIELD, max_size=6))
def test_the_plain_schema_is_byte_for_byte_the_pydantic_schema(spec):
    fields = {
        name: (annotation, Field(default=default, description=text) if text else Field(default))
        for name, (annotation, default, text) in spec.items()
        if not name.startswith("model_") and name not in dir(BaseModel)
    }
    fast = _plain_schema(fields)
    assert fast is not None
    assert json.dumps(fast) == json.dumps(_eager_schema(fields))


def _plain_tool(query: str, order: Literal["asc", "desc"] = "asc", limit: int = 5) -> str:
    """Search.

    Args:
        query: what to look for
        order: sort order
        limit: how many
    """
    return f"{query}|{order}|{limit}"


def test_registration_of_a_plain_tool_builds_no_model_until_the_first_call():
    tool = build_function_tool(_plain_tool)
    assert not tool.signature.model_built
    assert tool.parameters["required"] == ["query"]
    assert tool.parameters["properties"]["order"]["enum"] == ["asc", "desc"]
    assert tool.parameters["properties"]["limit"]["description"] == "how many"


async def test_the_lazily_built_model_validates_exactly_like_an_eager_one():
    tool = build_function_tool(_plain_tool)
    bad = await tool.execute("c1", {"query": "x", "order": "sideways"})
    assert bad.is_error and "'order'" in bad.content and "sideways" in bad.content
    missing = await tool.execute("c2", {"limit": 2})
    assert missing.is_error and "missing required field 'query'" in missing.content
    extra = await tool.execute("c3", {"query": "x", "colour": "red"})
    assert extra.is_error and "unexpected field 'colour'" in extra.content
    good = await tool.execute("c4", {"query": "x", "limit": "7"})
    assert (good.is_error, good.content) == (False, "x|asc|7")
    assert tool.signature.model_built


def test_concurrent_first_uses_build_one_model():
    signature = analyse_signature(_plain_tool, model_name="t", param_descriptions={})
    seen: list[type[BaseModel]] = []
    threads = [
        threading.Thread(target=lambda: seen.append(signature.arguments_model)) for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert len(seen) == 8 and len(set(seen)) == 1


class Point(BaseModel):
    x: int


def test_a_signature_with_a_model_type_is_built_eagerly():
    def plot(point: Point) -> str:
        """Plot."""
        return ""

    signature = analyse_signature(plot, model_name="t", param_descriptions={})
    assert signature.model_built and "x" in json.dumps(signature.parameters)


def test_a_reserved_field_name_takes_the_eager_path():
    assert _plain_schema({"model_config": (int, Field(1))}) is None
    assert _plain_schema({"_hidden": (int, Field(1))}) is None
    assert _plain_schema({"json": (int, Field(1))}) is None
