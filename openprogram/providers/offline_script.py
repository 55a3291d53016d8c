"""The offline model's script: a deterministic, documented reply to a chat request.

Pure Python (no litellm), so it is cheap to test; :mod:`openprogram.providers.offline`
serves it through litellm. Rules (docs/models.md):

* a user line ``/NAME {json}``, ``/NAME key=value ...`` or ``/NAME free text`` calls
  tool NAME (free text fills its first required string parameter); several such
  lines call several tools at once;
* a NAME offered only in the deferred catalog is first loaded with
  ``tool_search`` (``select:NAME``), then called;
* a NAME not offered at all gets a reply saying so, listing what is offered;
* after tool results it summarises them (name, ok/error, first lines);
* anything else gets a reply listing the tools offered this turn.
"""

from __future__ import annotations

import json
import re
import shlex
import uuid
from dataclasses import dataclass, field
from typing import Any

__all__ = ["OfflineReply", "offline_reply", "parse_command"]

_COMMAND = re.compile(r"^/([A-Za-z_][\w.:-]*)(?:\s+(.*))?$", re.DOTALL)
_KEY_VALUE = re.compile(r"^[A-Za-z_]\w*=")
_NAME = re.compile(r"[A-Za-z_][\w.:-]*")
_CATALOG_ENTRY = re.compile(r"^[-*]\s+([A-Za-z_][\w.-]*)(?::|$)")
_SEARCH_TOOL = "tool_search"


@dataclass
class OfflineReply:
    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    """``{"id", "name", "arguments"}`` with ``arguments`` as wire text."""


def _tool_names(tools: list[dict[str, Any]]) -> list[str]:
    return [tool["function"]["name"] for tool in tools if tool.get("function")]


def _schema(tools: list[dict[str, Any]], name: str) -> dict[str, Any]:
    for tool in tools:
        if tool.get("function", {}).get("name") == name:
            return tool["function"].get("parameters") or {}
    return {}


def _first_string_parameter(schema: dict[str, Any]) -> str:
    properties = schema.get("properties") or {}
    for key in [*(schema.get("required") or []), *properties]:
        if (properties.get(key) or {}).get("type", "string") == "string":
            return key
    return "input"


def _json_or_text(value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError:
        return value


def _command_name(line: str) -> str | None:
    match = _COMMAND.match(line.strip())
    return match.group(1) if match else None


def parse_command(line: str, schema: dict[str, Any]) -> tuple[str, str] | None:
    """``/NAME ...`` → ``(NAME, arguments JSON text)``; None if the line is no command.

    A ``{...}`` rest is passed through verbatim, so malformed JSON reaches the tool
    as the model wrote it (the tool's validation answers it).
    """
    match = _COMMAND.match(line.strip())
    if match is None:
        return None
    name, rest = match.group(1), (match.group(2) or "").strip()
    if not rest:
        return name, "{}"
    if rest.startswith("{"):
        return name, rest
    try:
        tokens = shlex.split(rest)
    except ValueError:
        tokens = []
    if tokens and all(_KEY_VALUE.match(token) for token in tokens):
        pairs = (token.split("=", 1) for token in tokens)
        return name, json.dumps({key: _json_or_text(value) for key, value in pairs})
    return name, json.dumps({_first_string_parameter(schema): rest})


def _deferred_names(system_prompt: str) -> list[str]:
    """Names in the system prompt's deferred catalog block (either of its two forms)."""
    from openprogram.programs.deferred import CATALOG_HEADER, deferred_catalog_names

    start = system_prompt.find(CATALOG_HEADER)
    return [] if start < 0 else deferred_catalog_names(system_prompt[start:])


def _call(name: str, arguments: str) -> dict[str, Any]:
    return {"id": f"call_{uuid.uuid4().hex[:12]}", "name": name, "arguments": arguments}


def _search_call(tools: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return _call(
        _SEARCH_TOOL,
        json.dumps({_first_string_parameter(_schema(tools, _SEARCH_TOOL)): f"select:{name}"}),
    )


def _offered_text(offered: list[str], deferred: list[str]) -> str:
    text = "Tools offered this turn: " + (", ".join(offered) if offered else "none") + "."
    if deferred:
        text += " Deferred (loaded on demand with tool_search): " + ", ".join(deferred) + "."
    return text


def _plan(
    commands: list[str], tools: list[dict[str, Any]], deferred: list[str], searched: set[str]
) -> OfflineReply:
    offered = _tool_names(tools)
    calls: list[dict[str, Any]] = []
    refusals: list[str] = []
    for line in commands:
        name = _command_name(line)
        if name is None:
            continue
        if name in offered:
            _, arguments = parse_command(line, _schema(tools, name)) or (name, "{}")
            calls.append(_call(name, arguments))
        elif name in deferred and name not in searched and _SEARCH_TOOL in offered:
            calls.append(_search_call(tools, name))
        else:
            refusals.append(f"The tool {name!r} is not offered in this turn.")
    if refusals and not calls:
        return OfflineReply(text=" ".join(refusals) + " " + _offered_text(offered, deferred))
    return OfflineReply(text=" ".join(refusals), tool_calls=calls)


def _summary(results: list[tuple[str, str]]) -> str:
    lines = [f"Results of {len(results)} tool call{'s' if len(results) != 1 else ''}:"]
    for name, content in results:
        status = "error" if content.lower().startswith("error") else "ok"
        head = " / ".join([line for line in content.splitlines() if line.strip()][:3])[:200]
        lines.append(f"- {name}: {status} — {head}")
    return "\n".join(lines)


def _searched_names(messages: list[dict[str, Any]]) -> set[str]:
    """Tool names already requested through ``tool_search`` (``select:NAME``) this turn."""
    names: set[str] = set()
    for message in messages:
        for call in message.get("tool_calls") or ():
            if call["function"]["name"] != _SEARCH_TOOL:
                continue
            arguments = _json_or_text(call["function"]["arguments"] or "{}")
            values = arguments.values() if isinstance(arguments, dict) else [arguments]
            for value in values:
                if isinstance(value, str) and value.startswith("select:"):
                    names.update(part.strip() for part in value[7:].split(","))
    return names


def offline_reply(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> OfflineReply:
    """The whole script: what the offline model says next, given the request."""
    system = "\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "system")
    deferred = [name for name in _deferred_names(system) if name not in _tool_names(tools)]
    last_user = next(
        (i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "user"), None
    )
    if last_user is None:
        return OfflineReply(text=_offered_text(_tool_names(tools), deferred))
    user_text = str(messages[last_user].get("content") or "")
    commands = [line for line in user_text.splitlines() if _COMMAND.match(line.strip())]
    after = messages[last_user + 1 :]
    if not after:
        if commands:
            return _plan(commands, tools, deferred, set())
        return OfflineReply(text=f"(offline model) {_offered_text(_tool_names(tools), deferred)}")
    names_by_id = {
        call["id"]: call["function"]["name"]
        for message in after
        for call in message.get("tool_calls") or ()
    }
    results = [
        (names_by_id.get(m.get("tool_call_id"), "tool"), str(m.get("content") or ""))
        for m in after
        if m.get("role") == "tool"
    ]
    searched = _searched_names(after)
    called = {name for name in names_by_id.values() if name != _SEARCH_TOOL}
    pending = [line for line in commands if _command_name(line) in searched - called]
    if pending:
        return _plan(pending, tools, deferred, searched)
    return OfflineReply(text=_summary([r for r in results if r[0] != _SEARCH_TOOL] or results))
