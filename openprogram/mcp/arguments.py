"""Checking a model's arguments for an MCP tool against the server's input schema."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import jsonschema
from jsonschema.exceptions import best_match

__all__ = ["ArgumentChecker"]

logger = logging.getLogger(__name__)


class ArgumentChecker:
    """Validates arguments with the dialect the schema names (2020-12 when it names none).

    The validator is built on the first call: checking hundreds of listed schemas
    would slow every listing. A schema that is itself invalid checks nothing (the
    server then judges the arguments).
    """

    def __init__(self, tool_name: str, schema: Mapping[str, Any]) -> None:
        self._tool_name = tool_name
        self._schema = schema
        self._validator: jsonschema.protocols.Validator | None = None
        self._built = False

    def _get_validator(self) -> jsonschema.protocols.Validator | None:
        if self._built:
            return self._validator
        self._built = True
        validator_class = jsonschema.validators.validator_for(
            self._schema, default=jsonschema.Draft202012Validator
        )
        try:
            validator_class.check_schema(self._schema)
        except jsonschema.SchemaError as exc:
            logger.warning(
                "MCP tool %r has an invalid input schema: %s", self._tool_name, exc.message
            )
        else:
            self._validator = validator_class(self._schema)
        return self._validator

    def check(self, args: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        """The arguments to send, and why they cannot be sent (None: they can).

        A model often writes ``null`` for an optional parameter it leaves out (strict
        structured-output modes teach it to). Where the schema does not allow null
        there, that null means "not given" and is dropped instead of failing the call
        (as SEP-2243 headers treat it: null or absent, no header).
        """
        validator = self._get_validator()
        if validator is None:
            return args, None
        required = set(self._schema.get("required") or ())
        unset = {
            error.path[0]
            for error in validator.iter_errors(args)
            if len(error.path) == 1 and error.instance is None and error.path[0] not in required
        }
        if unset:
            args = {key: value for key, value in args.items() if key not in unset}
        error = best_match(validator.iter_errors(args))
        if error is None:
            return args, None
        where = "/".join(str(part) for part in error.absolute_path)
        at = f" at {where!r}" if where else ""
        return args, f"Invalid arguments for {self._tool_name!r}{at}: {error.message}"
