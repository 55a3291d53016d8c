"""A tool call's arguments made ready to run: one rule set for every kind of tool.

Whatever class a tool is (``@function``, Agent method, a plugin's own ``AgentTool``
subclass, MCP), the model's arguments go through these steps, judged against the
tool's JSON Schema (``tool.parameters``):

1. **parse**: a JSON string or a dict; anything but a JSON object is refused;
2. **normalise** (:func:`drop_unset_nulls`): a ``null`` for an optional parameter
   whose schema does not allow null means "not given", so the key is dropped and
   the tool's default applies. Models write such nulls (strict structured-output
   modes teach them to list every property). A null is kept wherever the schema
   allows it: a ``type`` list with ``"null"``, an ``anyOf``/``oneOf`` branch that
   takes null, ``nullable: true`` (OpenAPI 3.0's spelling), an ``enum``/``const``
   holding null, an unconstrained schema, and all of these behind a ``$ref``
   (the schema's own validator decides, so the rule cannot drift from validation).
   A null for a **required** parameter is never dropped: there is no default to
   fall back on, so it fails validation with an error that says so;
3. **validate** against the schema with the dialect it names (2020-12 when it names
   none), ``nullable: true`` honoured as in step 2. A schema that is itself invalid
   checks nothing (the tool, or an MCP server, judges the arguments) and is logged.

Only top-level parameters are normalised. They are what has a default (a Python
parameter's, an MCP server's); inside a nested object a null is part of the value
the tool receives, and deleting keys from data (a record, a patch) would change what
the call means. A nested null the schema refuses stays an error naming its path, so
the model can correct it.

Where it runs: the agent loop calls :func:`prepare_arguments` before it announces
the call, so the trace, the approval prompt and the body all see the same
arguments; :func:`openprogram.programs.call_policy.dispatch_tool_call` normalises
again for callers outside the loop (a no-op for arguments already normalised), as do
``FunctionTool.execute`` and ``MCPTool.execute``, which library users and the MCP
conformance client call directly. The rule itself lives only here.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from openprogram.agent.types import AgentTool

if TYPE_CHECKING:
    import jsonschema

__all__ = [
    "InvalidArguments",
    "arguments_validator",
    "drop_unset_nulls",
    "prepare_arguments",
    "validate_arguments",
]

_log = logging.getLogger(__name__)


class InvalidArguments(ValueError):
    """The arguments cannot be run; the message is what the model reads."""


@functools.cache
def _nullable_aware(base: type[jsonschema.protocols.Validator]) -> type:
    """``base`` whose ``type`` keyword also accepts null next to ``nullable: true``."""
    import jsonschema

    check_type = base.VALIDATORS["type"]

    def type_or_nullable(validator: Any, types: Any, instance: Any, schema: Any) -> Any:
        if instance is None and schema.get("nullable") is True:
            return
        yield from check_type(validator, types, instance, schema)

    return jsonschema.validators.extend(base, {"type": type_or_nullable})


@functools.lru_cache(maxsize=1024)
def _validator(schema_json: str) -> jsonschema.protocols.Validator | None:
    # Imported here: jsonschema costs ~60 ms, and a process that never runs a tool call
    # (the web server before its first turn) should not pay it.
    import jsonschema

    schema = json.loads(schema_json)
    base = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        base.check_schema(schema)
    except jsonschema.SchemaError as exc:
        _log.warning("a tool's parameters schema is invalid; arguments go unchecked: %s", exc)
        return None
    return _nullable_aware(base)(schema)


def arguments_validator(schema: Mapping[str, Any]) -> jsonschema.protocols.Validator | None:
    """A validator for ``schema`` (cached per distinct schema); None when it is invalid."""
    return _validator(json.dumps(schema, sort_keys=True, default=str))


def _required(schema: Mapping[str, Any]) -> frozenset[str]:
    required = schema.get("required")
    return frozenset(required) if isinstance(required, list | tuple) else frozenset()


def drop_unset_nulls(schema: Mapping[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    """``args`` without the nulls that mean "not given" (module doc, step 2).

    Returns ``args`` itself when nothing is dropped, a new dict otherwise.
    """
    if not isinstance(args, dict) or not any(value is None for value in args.values()):
        return args
    validator = arguments_validator(schema)
    if validator is None:
        return args
    required = _required(schema)
    unset = {
        error.path[0]
        for error in validator.iter_errors(args)
        if len(error.path) == 1 and error.instance is None and error.path[0] not in required
    }
    if not unset:
        return args
    return {key: value for key, value in args.items() if key not in unset}


def validate_arguments(tool_name: str, schema: Mapping[str, Any], args: dict[str, Any]) -> None:
    """Raise :class:`InvalidArguments` naming the first problem (module doc, step 3)."""
    validator = arguments_validator(schema)
    if validator is None:
        return
    from jsonschema.exceptions import best_match

    error = best_match(validator.iter_errors(args))
    if error is None:
        return
    path = list(error.absolute_path)
    where = f"at {'/'.join(str(part) for part in path)!r}" if path else "at the top level"
    message = f"invalid arguments for {tool_name!r} {where}: {error.message}"
    if error.instance is None and len(path) == 1 and path[0] in _required(schema):
        message += f" ({path[0]!r} is required: give it a value, null does not leave it out)"
    raise InvalidArguments(message)


def _parse(tool_name: str, raw: str | dict[str, Any]) -> dict[str, Any]:
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw or "{}")
        except json.JSONDecodeError as exc:
            raise InvalidArguments(
                f"arguments for {tool_name!r} are not valid JSON ({exc.msg} at position "
                f"{exc.pos}): {raw[:200]!r}"
            ) from None
    else:
        parsed = raw
    if not isinstance(parsed, dict):
        raise InvalidArguments(
            f"arguments for {tool_name!r} must be a JSON object, got {parsed!r:.200}"
        )
    return parsed


def prepare_arguments(tool: AgentTool, raw: str | dict[str, Any]) -> dict[str, Any]:
    """The arguments ``tool`` runs with: parsed, normalised, validated (module doc).

    Raises :class:`InvalidArguments` (a ``ValueError``) saying what is wrong.
    """
    args = drop_unset_nulls(tool.parameters, _parse(tool.name, raw))
    validate_arguments(tool.name, tool.parameters, args)
    return args
