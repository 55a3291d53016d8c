"""Derive a tool's model-facing surface from a Python signature and docstring.

The docstring is parsed with ``docstring_parser`` (Google, reST, NumPy and
Epydoc styles): the description is the first paragraph, parameter
descriptions come from the parameter sections. Types go through pydantic: one
``create_model`` per tool both validates the model's arguments and produces
the JSON Schema, so the two can never disagree.

Parameters the runtime injects (``cancel``, ``on_update`` and, unless the
decorator makes it LLM-controllable, ``timeout``) never reach the schema.

Registration cost: ``create_model`` plus ``model_json_schema`` take about a
millisecond per tool, which adds up for plugins and MCP servers registering
hundreds. When every parameter is *plain* (built from str/int/float/bool/None/Any,
Literal of those, and list/dict/set/tuple/Optional/Union of plain types, with a
JSON-primitive default and a safe field name), the schema is assembled from
per-type schemas pydantic produced once per distinct annotation (cached), and the
arguments model is built on first validation. The result is byte-for-byte the
schema the eager path produces (a property test compares the two); anything else
takes the eager path, so unusual types still fail at decoration time.
"""

from __future__ import annotations

import functools
import inspect
import math
import re
import threading
import types
import typing
from collections.abc import Callable
from typing import Any, Literal

import docstring_parser
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, create_model
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


class ToolSignature:
    """What the runtime needs to know about a tool function's parameters.

    ``parameters`` (the JSON Schema) is always ready; the pydantic model that
    validates arguments may be built on first use (see the module docstring).
    """

    def __init__(
        self,
        *,
        parameters: dict[str, Any],
        field_names: frozenset[str],
        injected: frozenset[InjectedParam],
        accepts_var_keyword: bool,
        arguments_model: type[BaseModel] | None = None,
        build_model: Callable[[], type[BaseModel]] | None = None,
    ) -> None:
        if (arguments_model is None) == (build_model is None):
            raise ValueError("give exactly one of arguments_model and build_model")
        self.parameters = parameters
        """The JSON Schema the model sees."""
        self.field_names = field_names
        """The LLM-visible parameter names (the arguments model's fields)."""
        self.injected = injected
        """Runtime-provided parameters the function declares."""
        self.accepts_var_keyword = accepts_var_keyword
        """``**kwargs``: only allowed with an explicit ``parameters=`` schema."""
        self._model = arguments_model
        self._build_model = build_model
        self._lock = threading.Lock()

    @property
    def model_built(self) -> bool:
        return self._model is not None

    @property
    def arguments_model(self) -> type[BaseModel]:
        """Validates the model's arguments; built once, on first use when lazy."""
        model = self._model
        if model is None:
            with self._lock:
                if self._model is None:
                    assert self._build_model is not None
                    self._model = self._build_model()
                model = self._model
        return model


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
    common = {
        "field_names": frozenset(fields),
        "injected": frozenset(injected),
        "accepts_var_keyword": var_keyword,
    }
    fast = _plain_schema(fields)
    if fast is not None:
        return ToolSignature(
            parameters=fast,
            build_model=functools.partial(_arguments_model, model_name, fields),
            **common,
        )
    try:
        model = _arguments_model(model_name, fields)
        raw = model.model_json_schema()
    except Exception as exc:
        raise SchemaError(f"a parameter type has no JSON Schema: {exc}") from exc
    return ToolSignature(parameters=clean_json_schema(raw), arguments_model=model, **common)


def _arguments_model(model_name: str, fields: dict[str, Any]) -> type[BaseModel]:
    return create_model(  # type: ignore[call-overload,no-any-return]
        model_name,
        __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=False),
        **fields,
    )


_PLAIN_TYPES: frozenset[Any] = frozenset({str, int, float, bool, type(None), Any})
_PLAIN_ORIGINS: frozenset[Any] = frozenset(
    {list, dict, set, frozenset, tuple, typing.Union, types.UnionType}
)
_RESERVED_NAMES = frozenset(dir(BaseModel))


def _is_plain(annotation: Any) -> bool:
    try:
        if annotation in _PLAIN_TYPES or annotation is Ellipsis:
            return True
    except TypeError:  # an unhashable annotation object
        return False
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return all(type(value) in (str, int, bool) for value in typing.get_args(annotation))
    return origin in _PLAIN_ORIGINS and all(_is_plain(arg) for arg in typing.get_args(annotation))


def _is_primitive_default(value: Any) -> bool:
    if value is None or type(value) in (str, bool, int):
        return True
    return type(value) is float and math.isfinite(value)


@functools.lru_cache(maxsize=512)
def _type_schema(annotation: Any) -> dict[str, Any]:
    # Exactly what pydantic puts in a model's property for this type (keys sorted).
    return TypeAdapter(annotation).json_schema()


def _has_ref(node: Any) -> bool:
    if isinstance(node, dict):
        return "$ref" in node or any(_has_ref(value) for value in node.values())
    if isinstance(node, list):
        return any(_has_ref(item) for item in node)
    return False


def _plain_schema(fields: dict[str, tuple[Any, FieldInfo]]) -> dict[str, Any] | None:
    """The schema without building a model, or None when a field is not plain."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, (annotation, info) in fields.items():
        if name.startswith(("_", "model_")) or name in _RESERVED_NAMES:
            return None
        if not _is_plain(annotation):
            return None
        try:
            prop = dict(_type_schema(annotation))
        except Exception:
            return None  # the eager path reports it properly
        if _has_ref(prop):
            return None
        if info.is_required():
            required.append(name)
        elif _is_primitive_default(info.default):
            prop["default"] = info.default
        else:
            return None
        if info.description:
            prop["description"] = info.description
        properties[name] = {key: prop[key] for key in sorted(prop)}
    schema: dict[str, Any] = {"additionalProperties": False, "properties": properties}
    if required:
        schema["required"] = required
    schema["type"] = "object"
    return schema


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
