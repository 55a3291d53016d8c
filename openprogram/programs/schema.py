"""Derive a tool's model-facing surface from a Python signature and docstring.

The docstring is parsed with ``docstring_parser`` (Google, reST, NumPy and
Epydoc styles): the description is the first paragraph, parameter
descriptions come from the parameter sections. Types go through pydantic: one
``create_model`` per tool both validates the model's arguments and produces
the JSON Schema, so the two can never disagree.

Parameters the runtime injects (``cancel``, ``on_update`` and, unless the
decorator makes it LLM-controllable, ``timeout``) never reach the schema.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import docstring_parser
from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.fields import FieldInfo

__all__ = [
    "INJECTED_PARAMS",
    "InjectedParam",
    "SchemaError",
    "ToolSignature",
    "analyse_signature",
    "clean_json_schema",
    "describe_function",
]

InjectedParam = Literal["cancel", "on_update", "timeout"]
INJECTED_PARAMS: frozenset[InjectedParam] = frozenset({"cancel", "on_update", "timeout"})
_WHITESPACE = re.compile(r"\s+")


class SchemaError(ValueError):
    """The signature cannot become a tool schema (e.g. ``*args``)."""


@dataclass(frozen=True)
class ToolSignature:
    """What the runtime needs to know about a tool function's parameters."""

    arguments_model: type[BaseModel]
    """Validates the model's arguments; fields are exactly the LLM-visible ones."""
    parameters: dict[str, Any]
    """The JSON Schema derived from :attr:`arguments_model`."""
    injected: frozenset[InjectedParam]
    """Runtime-provided parameters the function declares."""
    accepts_var_keyword: bool
    """``**kwargs``: only allowed with an explicit ``parameters=`` schema."""


def _collapse(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip()


def _first_paragraph(text: str | None) -> str:
    if not text:
        return ""
    return _collapse(re.split(r"\n\s*\n", text.strip(), maxsplit=1)[0])


def describe_function(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """``(description, {param: description})`` from ``fn``'s docstring.

    The description is the short description plus the first paragraph of the
    long one: a wrapped first sentence stays whole, and a one-line summary
    followed by a paragraph keeps the paragraph.
    """
    doc = inspect.getdoc(fn) or ""
    if not doc.strip():
        return "", {}
    try:
        parsed = docstring_parser.parse(doc)
    except docstring_parser.ParseError:
        # A docstring no style understands still has a usable first paragraph.
        return _first_paragraph(doc), {}
    short = _collapse(parsed.short_description or "")
    long_first = _first_paragraph(parsed.long_description)
    if short and long_first:
        joiner = "\n\n" if parsed.blank_after_short_description else " "
        description = f"{short}{joiner}{long_first}"
    else:
        description = short or long_first
    params = {
        p.arg_name: _collapse(p.description or "")
        for p in parsed.params
        if p.args and p.args[0] in {"param", "parameter", "arg", "argument", "key", "keyword"}
    }
    return description, params


def _annotated_description(annotation: Any) -> bool:
    if typing.get_origin(annotation) is not typing.Annotated:
        return False
    return any(isinstance(meta, FieldInfo) and meta.description for meta in annotation.__metadata__)


def _timeout_field(
    default: Any, timeout_min: float | None, timeout_max: float | None, text: str
) -> tuple[Any, FieldInfo]:
    bounds = []
    if timeout_min is not None:
        bounds.append(f"at least {timeout_min:g}")
    if timeout_max is not None:
        bounds.append(f"at most {timeout_max:g}")
    description = _collapse(
        f"{text or 'Seconds this call may run.'} Clamped to {' and '.join(bounds)} seconds."
    )
    if default is None:
        return float | None, Field(default=None, description=description)
    low = timeout_min if timeout_min is not None else default
    high = timeout_max if timeout_max is not None else default
    return float, Field(default=min(max(float(default), low), high), description=description)


def analyse_signature(
    fn: Callable[..., Any],
    *,
    model_name: str,
    param_descriptions: dict[str, str],
    llm_timeout: bool = False,
    timeout_min: float | None = None,
    timeout_max: float | None = None,
    timeout_default: float | None = None,
) -> ToolSignature:
    """Build the arguments model and JSON Schema for ``fn``.

    ``llm_timeout`` puts ``timeout`` in the schema (a number whose description
    states the clamp bounds); otherwise it is injected like ``cancel``.
    A bound method's ``self`` is already gone from its signature.
    """
    try:
        signature = inspect.signature(fn)
        hints = typing.get_type_hints(fn, include_extras=True)
    except (TypeError, ValueError, NameError) as exc:
        raise SchemaError(f"cannot read the signature: {exc}") from exc
    fields: dict[str, Any] = {}
    injected: set[InjectedParam] = set()
    var_keyword = False
    for param in signature.parameters.values():
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            raise SchemaError(f"*{param.name} cannot be filled from JSON arguments")
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            var_keyword = True
            continue
        if param.name in {"self", "cls"} and param.annotation is inspect.Parameter.empty:
            raise SchemaError(
                f"{param.name!r} would be sent by the model; build the tool from a bound "
                "method (obj.method) or use an Agent's method_options"
            )
        if param.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise SchemaError(f"positional-only parameter {param.name!r} cannot be passed by name")
        default = ... if param.default is inspect.Parameter.empty else param.default
        description = param_descriptions.get(param.name, "")
        if param.name == "timeout" and llm_timeout:
            # The decorator's static timeout is the default budget; else the def's default.
            fields["timeout"] = _timeout_field(
                timeout_default if timeout_default is not None or default is ... else default,
                timeout_min,
                timeout_max,
                description,
            )
            continue
        if param.name in INJECTED_PARAMS:
            injected.add(typing.cast(InjectedParam, param.name))
            continue
        annotation = hints.get(param.name, Any)
        # Annotated[..., Field(description=...)] wins over the docstring.
        if description and not _annotated_description(annotation):
            info = Field(default=default, description=description)
        else:
            info = Field(default=default)
        fields[param.name] = (annotation, info)
    if llm_timeout and "timeout" not in fields:
        raise SchemaError("timeout_min/timeout_max need a 'timeout' parameter to clamp")
    try:
        model = create_model(  # type: ignore[call-overload]
            model_name,
            __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=False),
            **fields,
        )
        raw = model.model_json_schema()
    except Exception as exc:
        raise SchemaError(f"a parameter type has no JSON Schema: {exc}") from exc
    return ToolSignature(
        arguments_model=model,
        parameters=clean_json_schema(raw),
        injected=frozenset(injected),
        accepts_var_keyword=var_keyword,
    )


def _strip_titles(node: Any) -> Any:
    """Drop pydantic's ``title`` annotations, but not properties named "title"."""
    if isinstance(node, list):
        return [_strip_titles(item) for item in node]
    if not isinstance(node, dict):
        return node
    cleaned: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in {"properties", "$defs", "definitions", "patternProperties"} and isinstance(
            value, dict
        ):
            cleaned[key] = {name: _strip_titles(sub) for name, sub in value.items()}
        else:
            cleaned[key] = _strip_titles(value)
    return cleaned


class _RecursiveRef(Exception):
    pass


def _inline_refs(node: Any, defs: dict[str, Any], seen: tuple[str, ...] = ()) -> Any:
    if isinstance(node, list):
        return [_inline_refs(item, defs, seen) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref.removeprefix("#/$defs/")
        if name in seen or name not in defs:
            raise _RecursiveRef(name)
        target = _inline_refs(defs[name], defs, (*seen, name))
        siblings = {k: _inline_refs(v, defs, seen) for k, v in node.items() if k != "$ref"}
        return {**target, **siblings}
    return {key: _inline_refs(value, defs, seen) for key, value in node.items()}


def clean_json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Provider-friendly schema: no titles, ``$defs`` inlined unless recursive.

    The top level always has ``type: object``, ``properties`` and
    ``additionalProperties: false``; ``required`` is omitted when empty.
    """
    cleaned = _strip_titles(schema)
    defs = cleaned.get("$defs")
    if defs:
        try:
            body = {k: v for k, v in cleaned.items() if k != "$defs"}
            cleaned = _inline_refs(body, defs)
        except _RecursiveRef:
            pass  # recursive models keep their $defs: still valid JSON Schema
    cleaned.setdefault("type", "object")
    cleaned.setdefault("properties", {})
    cleaned["additionalProperties"] = False
    if not cleaned.get("required"):
        cleaned.pop("required", None)
    return cleaned
