"""Elicitation: an MCP server asks the person in the chat for input during a call.

The requested schema is untrusted server data. :func:`form_fields` accepts only
the flat, primitive subset the protocol allows (strings with an optional
format, numbers, integers, booleans, single- and multi-select enums) and
refuses anything else with a message; :func:`complete_content` fills in the
schema's defaults (SEP-1034) and checks an answer before it goes back.
:class:`CallElicitor` is one call's way to the person: the connection hands it
the server's request, it asks through the turn that made the call (on that
turn's event loop) and turns the answer into the protocol's result.
"""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import mcp_types
from jsonschema.exceptions import best_match

from openprogram.agent.elicitation import (
    ElicitationAnswer,
    ElicitationField,
    ElicitationHook,
    ElicitationRequest,
)

__all__ = [
    "CallElicitor",
    "MalformedElicitation",
    "complete_content",
    "form_defaults",
    "form_fields",
]

logger = logging.getLogger(__name__)

MAX_FIELDS = 50
MAX_TEXT_CHARS = 2_000
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_STRING_FORMATS = {"", "email", "uri", "date", "date-time"}
_INVALID_PARAMS = -32602


class MalformedElicitation(ValueError):
    """The server's elicitation request is outside what the protocol allows."""


def _text(value: Any, *, limit: int = MAX_TEXT_CHARS) -> str:
    text = _CONTROL_CHARS.sub("", value if isinstance(value, str) else "").strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _number(value: Any, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MalformedElicitation(f"{what} must be a number")
    return float(value)


def _length(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise MalformedElicitation(f"{what} must be a non-negative integer")
    return value


def _titled_options(items: Any, what: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(items, list) or not items:
        raise MalformedElicitation(f"{what} must be a non-empty list of {{const, title}}")
    options = []
    for item in items:
        if not isinstance(item, Mapping) or not isinstance(item.get("const"), str):
            raise MalformedElicitation(f"{what} entries need a string 'const'")
        options.append((item["const"], _text(item.get("title")) or item["const"]))
    return tuple(options)


def _plain_options(values: Any, names: Any, what: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
        raise MalformedElicitation(f"{what} must be a non-empty list of strings")
    labels = names if isinstance(names, list) and len(names) == len(values) else values
    return tuple(
        (value, _text(label) or value) for value, label in zip(values, labels, strict=True)
    )


def _field(name: str, spec: Any, required: bool) -> ElicitationField:
    where = f"field {name!r}"
    if not isinstance(spec, Mapping):
        raise MalformedElicitation(f"{where} must be an object")
    kind = spec.get("type")
    common: dict[str, Any] = {
        "name": name,
        "title": _text(spec.get("title"), limit=200) or name,
        "description": _text(spec.get("description")),
        "required": required,
    }
    default = spec.get("default")
    if kind == "string" and ("enum" in spec or "oneOf" in spec):
        options = (
            _titled_options(spec["oneOf"], f"{where}: oneOf")
            if "oneOf" in spec
            else _plain_options(spec["enum"], spec.get("enumNames"), f"{where}: enum")
        )
        if default is not None and default not in {value for value, _ in options}:
            raise MalformedElicitation(f"{where}: the default is not one of the options")
        return ElicitationField(kind="choice", default=default, options=options, **common)
    if kind == "string":
        fmt = spec.get("format") or ""
        if fmt not in _STRING_FORMATS:
            raise MalformedElicitation(f"{where}: format {fmt!r} is not supported")
        if default is not None and not isinstance(default, str):
            raise MalformedElicitation(f"{where}: the default must be a string")
        return ElicitationField(
            kind="string",
            default=default,
            format=fmt,
            min_length=_length(spec.get("minLength"), f"{where}: minLength"),
            max_length=_length(spec.get("maxLength"), f"{where}: maxLength"),
            **common,
        )
    if kind in ("number", "integer"):
        if default is not None and (
            isinstance(default, bool)
            or not isinstance(default, int if kind == "integer" else int | float)
        ):
            raise MalformedElicitation(f"{where}: the default must be a {kind}")
        return ElicitationField(
            kind=kind,
            default=default,
            minimum=_number(spec.get("minimum"), f"{where}: minimum"),
            maximum=_number(spec.get("maximum"), f"{where}: maximum"),
            **common,
        )
    if kind == "boolean":
        if default is not None and not isinstance(default, bool):
            raise MalformedElicitation(f"{where}: the default must be true or false")
        return ElicitationField(kind="boolean", default=default, **common)
    if kind == "array":
        items = spec.get("items")
        if not isinstance(items, Mapping):
            raise MalformedElicitation(f"{where}: a multi-select needs 'items'")
        options = (
            _titled_options(items["anyOf"], f"{where}: items.anyOf")
            if "anyOf" in items
            else _plain_options(items.get("enum"), None, f"{where}: items.enum")
        )
        values = {value for value, _ in options}
        if default is not None and (not isinstance(default, list) or not set(default) <= values):
            raise MalformedElicitation(f"{where}: the default must be a list of the options")
        return ElicitationField(kind="choices", default=default, options=options, **common)
    raise MalformedElicitation(f"{where}: type {kind!r} is not a primitive the form can ask for")


def form_fields(schema: Any) -> list[ElicitationField]:
    """The form a requested schema describes; raises :class:`MalformedElicitation`."""
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        raise MalformedElicitation("the requested schema must be an object schema")
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        raise MalformedElicitation("the requested schema needs a 'properties' object")
    if len(properties) > MAX_FIELDS:
        raise MalformedElicitation(f"the form has {len(properties)} fields; at most {MAX_FIELDS}")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise MalformedElicitation("'required' must be a list of field names")
    unknown = sorted(set(required) - set(properties))
    if unknown:
        raise MalformedElicitation(f"'required' names fields that do not exist: {unknown}")
    fields = []
    for name, spec in properties.items():
        if not isinstance(name, str) or not _NAME.match(name):
            raise MalformedElicitation(f"field name {name!r} is not a plain identifier")
        fields.append(_field(name, spec, name in required))
    return fields


def form_defaults(schema: Any) -> dict[str, Any]:
    """Every field's default value (fields without one are left out)."""
    return {f.name: f.default for f in form_fields(schema) if f.default is not None}


def complete_content(schema: Any, content: Mapping[str, Any]) -> dict[str, Any]:
    """``content`` with the defaults of missing fields filled in, checked against ``schema``.

    Raises ``ValueError`` (naming the field) when the answer does not fit.
    """
    fields = {f.name: f for f in form_fields(schema)}
    unknown = sorted(set(content) - set(fields))
    if unknown:
        raise ValueError(f"unknown fields {unknown}")
    completed = {**form_defaults(schema), **{k: v for k, v in content.items() if v is not None}}
    validator = jsonschema.Draft202012Validator(
        dict(schema), format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )
    error = best_match(validator.iter_errors(completed))
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path)
        raise ValueError(f"{where}: {error.message}" if where else error.message)
    return completed


def _safe_url(url: Any) -> str:
    if not isinstance(url, str) or len(url) > 4_000:
        raise MalformedElicitation("the link must be a string of at most 4000 characters")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise MalformedElicitation("the link must be an http(s) URL with a host")
    return url


def _request(params: Any, *, server: str, tool_call_id: str) -> ElicitationRequest:
    mode = getattr(params, "mode", "form") or "form"
    message = _text(getattr(params, "message", "")) or f"{server} asks for input"
    call_id = f"elicit-{uuid.uuid4().hex[:12]}"
    if mode == "url":
        return ElicitationRequest(
            call_id=call_id,
            tool_call_id=tool_call_id,
            source=server,
            mode="url",
            message=message,
            url=_safe_url(getattr(params, "url", None)),
        )
    if mode != "form":
        raise MalformedElicitation(f"mode {mode!r} is neither 'form' nor 'url'")
    schema = getattr(params, "requested_schema", None)
    fields = form_fields(schema)
    return ElicitationRequest(
        call_id=call_id,
        tool_call_id=tool_call_id,
        source=server,
        mode="form",
        message=message,
        fields=fields,
        complete=lambda content: complete_content(schema, content),
    )


ElicitResponse = mcp_types.ElicitResult | mcp_types.ErrorData


class CallElicitor:
    """One MCP call's way to ask the person, from the manager's loop to the turn's.

    ``owner`` names the turn; the connection routes a server's request to a call
    only when every call in flight belongs to the same turn (stdio carries no
    link from a server request to the call that caused it). ``on_refusal`` gets
    a line for the call's live output when a request is refused.
    """

    def __init__(
        self,
        *,
        loop: asyncio.AbstractEventLoop,
        hook: ElicitationHook | None,
        server: str,
        tool_call_id: str,
        owner: object,
        on_refusal: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        self._loop = loop
        self._hook = hook
        self.server = server
        self.tool_call_id = tool_call_id
        self.owner = owner
        self._on_refusal = on_refusal

    async def __call__(self, params: Any) -> ElicitResponse:
        try:
            request = _request(params, server=self.server, tool_call_id=self.tool_call_id)
        except MalformedElicitation as exc:
            message = f"elicitation refused: {exc}"
            logger.warning("MCP server %r sent a malformed elicitation: %s", self.server, exc)
            if self._on_refusal is not None:
                await self._on_refusal(message)
            return mcp_types.ErrorData(code=_INVALID_PARAMS, message=message)
        if self._hook is None:
            return mcp_types.ElicitResult(action="decline")
        answer = await asyncio.wrap_future(
            asyncio.run_coroutine_threadsafe(_ask(self._hook, request), self._loop)
        )
        if answer.action == "accept" and request.mode == "form":
            return mcp_types.ElicitResult(action="accept", content=answer.content or {})
        return mcp_types.ElicitResult(action=answer.action)


async def _ask(hook: ElicitationHook, request: ElicitationRequest) -> ElicitationAnswer:
    return await hook(request)
