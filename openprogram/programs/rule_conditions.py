"""Argument conditions of policy rules: what each kind reads, and when it matches.

A condition narrows a rule to some calls of its tool. Each kind reads one argument:

- ``command`` (``bash`` only): a pattern on the command's words (``*`` any text,
  ``?`` one character, everything else literal), e.g. ``git status*``. For an *allow*
  rule it matches only one simple command (``_bash_words.simple_command``); for *ask*
  and *deny* any piece of a compound command (best-effort; an unreadable command counts
  as a match).
- ``path`` (the file tools): path globs (``_path_globs``), matched on the normalised
  workspace-relative path; a path with ``..``, an absolute path, or one that is not
  text matches an *ask*/*deny* glob and never an *allow* glob. For tools that walk
  (``list_dir``, ``glob``, ``grep``), a deny/ask glob also matches a walk that may
  reach it; ``glob``'s own pattern counts as part of the path.
- ``host`` (``web_fetch``): host names, ``example.com`` exactly or ``*.example.com``
  for any name below it, matched on the host the fetcher connects to
  (``security.urls.check_url``). The fetcher applies the rules again at every
  redirect hop (``call_policy``).
- ``pointer`` (any tool): the argument at a JSON pointer (RFC 6901) ``equals`` a JSON
  value, or, a string, ``matches`` a regex (RE2, whole value).

``negate`` turns a condition into its opposite ("when the path is *not* in
``docs/**``"), which is how "``write`` outside ``docs/**`` asks" and "``web_fetch``
only to our domains" are written. The opposite of the strict reading is taken, so a
negated deny still errs on the strict side; and an *allow* never matches a call whose
argument is not clean (a compound command, a path with ``..``, a URL without a host),
negated or not.

:func:`condition_problems` is the one validation every form and API uses: it returns
``{field: message}`` for a malformed glob or pointer, a condition on the wrong tool,
or a regex RE2 refuses.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from openprogram.programs._bash_words import command_segments, simple_command
from openprogram.programs._path_globs import (
    GlobProblem,
    compile_glob,
    glob_subject,
    may_reach,
    normalised_path,
)
from openprogram.programs._rule_regex import Pattern, RegexProblem, compile_pattern

__all__ = [
    "CONDITION_TOOLS",
    "FILE_TOOLS",
    "Condition",
    "ConditionKind",
    "condition_matches",
    "condition_problems",
    "fetch_host",
    "parse_pointer",
]

ConditionKind = Literal["command", "path", "host", "pointer"]
FILE_TOOLS = frozenset({"read", "write", "edit", "list_dir", "glob", "grep"})
_WALKING_TOOLS = frozenset({"list_dir", "glob", "grep"})
CONDITION_TOOLS: dict[str, frozenset[str] | None] = {
    "command": frozenset({"bash"}),
    "path": FILE_TOOLS,
    "host": frozenset({"web_fetch"}),
    "pointer": None,  # any tool
}
"""Which tool names each condition kind may be put on (None: any)."""
_HOST = re.compile(
    r"^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$"
)


@dataclass(frozen=True)
class Condition:
    """An argument condition (module doc). ``values``: the command pattern (one), the
    path globs, or the host names; ``pointer``/``op``/``value`` for the ``pointer`` kind
    (``value`` is JSON text for ``equals``, a regex for ``matches``)."""

    kind: ConditionKind
    values: tuple[str, ...] = ()
    pointer: str = ""
    op: Literal["equals", "matches"] = "equals"
    value: str = ""
    negate: bool = False

    def words(self) -> str:
        is_ = "is not" if self.negate else "is"
        if self.kind == "command":
            return f"when the command {is_} {' or '.join(map(repr, self.values))}"
        if self.kind == "path":
            return f"when the path {is_} in {', '.join(self.values)}"
        if self.kind == "host":
            return f"when the host {is_} one of {', '.join(self.values)}"
        verb = (
            ("equals" if self.op == "equals" else "matches")
            if not self.negate
            else ("does not equal" if self.op == "equals" else "does not match")
        )
        return f"when {self.pointer or '(the arguments)'} {verb} {self.value}"


def parse_pointer(pointer: str) -> tuple[str, ...]:
    """The reference tokens of a JSON pointer; ValueError when it is malformed."""
    if pointer == "":
        return ()
    if not pointer.startswith("/"):
        raise ValueError(f"JSON pointer {pointer!r} must be empty or start with '/'")
    tokens = pointer[1:].split("/")
    for token in tokens:
        if re.search(r"~(?![01])", token):
            raise ValueError(f"JSON pointer {pointer!r}: '~' must be followed by 0 or 1")
    return tuple(t.replace("~1", "/").replace("~0", "~") for t in tokens)


_MISSING = object()


def _at_pointer(args: Any, tokens: tuple[str, ...]) -> Any:
    value = args
    for token in tokens:
        if isinstance(value, dict):
            value = value.get(token, _MISSING)
        elif isinstance(value, list) and re.fullmatch(r"0|[1-9][0-9]*", token):
            index = int(token)
            value = value[index] if index < len(value) else _MISSING
        else:
            return _MISSING
        if value is _MISSING:
            return _MISSING
    return value


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _command_regex(pattern: str) -> str:
    return "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)


@functools.lru_cache(maxsize=4096)
def _compiled_command(pattern: str) -> Pattern:
    return compile_pattern(_command_regex(pattern), field="command pattern")


def _host_matches(host: str, entry: str) -> bool:
    if entry.startswith("*."):
        return host.endswith(entry[1:])
    return host == entry


def fetch_host(url: Any) -> str | None:
    """The host ``web_fetch`` would connect to for ``url`` (lower case), or None."""
    from openprogram.security.urls import UnsafeURL, check_url

    try:
        return check_url(url).host.lower().rstrip(".")
    except (UnsafeURL, TypeError, AttributeError):
        return None


def condition_matches(
    condition: Condition, tool_name: str, args: dict[str, Any], *, allow: bool
) -> bool:
    """Whether ``condition`` holds for this call; ``allow`` picks the strict reading."""
    if not condition.negate:
        return _holds(condition, tool_name, args, allow=allow)
    if allow and not _clean(condition.kind, tool_name, args):
        return False
    return not _holds(condition, tool_name, args, allow=not allow)


def _clean(kind: ConditionKind, tool_name: str, args: dict[str, Any]) -> bool:
    """The argument an allow reads can be trusted: one simple command, a plain path, a host."""
    if kind == "command":
        command = args.get("command")
        return isinstance(command, str) and simple_command(command) is not None
    if kind == "path":
        pattern = args.get("pattern") if tool_name == "glob" else ""
        return normalised_path(args.get("path", ".")) is not None and (
            normalised_path(pattern) is not None if isinstance(pattern, str) else False
        )
    if kind == "host":
        return fetch_host(args.get("url")) is not None
    return True


def _holds(condition: Condition, tool_name: str, args: dict[str, Any], *, allow: bool) -> bool:
    kind = condition.kind
    if kind == "command":
        command = args.get("command")
        if allow:
            words = simple_command(command) if isinstance(command, str) else None
            pieces = [words] if words is not None else []
        else:
            segments = command_segments(command) if isinstance(command, str) else None
            if segments is None:
                return True
            pieces = segments
        return any(
            _compiled_command(p).fullmatch(piece) for p in condition.values for piece in pieces
        )
    if kind == "path":
        return _path_matches(condition, tool_name, args, allow=allow)
    if kind == "host":
        host = fetch_host(args.get("url"))
        if host is None:
            return not allow
        return any(_host_matches(host, entry) for entry in condition.values)
    target = _at_pointer(args, parse_pointer(condition.pointer))
    if target is _MISSING:
        return False
    if condition.op == "equals":
        return _canonical(target) == _canonical(json.loads(condition.value))
    return isinstance(target, str) and bool(
        compile_pattern(condition.value, field="value").fullmatch(target)
    )


def _path_matches(
    condition: Condition, tool_name: str, args: dict[str, Any], *, allow: bool
) -> bool:
    raw = args.get("path", ".")
    path = normalised_path(raw)
    if tool_name == "glob" and path is not None:
        # glob's pattern names paths below ``path``: it must stay there too.
        pattern = args.get("pattern")
        below = normalised_path(pattern) if isinstance(pattern, str) else None
        if below is None:
            path = None
        elif allow:
            # An allow glob must cover everything the pattern can reach: its fixed part.
            from openprogram.programs._path_globs import literal_prefix

            path = "/".join(p for p in (path, literal_prefix(below)) if p)
    if path is None:
        return not allow
    subject = glob_subject(path)
    for glob in condition.values:
        walking = tool_name in _WALKING_TOOLS
        if compile_glob(glob).fullmatch(subject) and (
            not allow or not walking or _walk_stays(path, glob)
        ):
            return True
        if not allow and walking and may_reach(path, glob):
            return True
    return False


def _walk_stays(path: str, glob: str) -> bool:
    """An allow glob covers a walk from ``path`` only if it covers everything below it."""
    probe = glob_subject(f"{path}/x/y" if path else "x/y")
    return bool(compile_glob(glob).fullmatch(probe))


def condition_problems(condition: Condition, tool_pattern: str) -> dict[str, str]:
    """``{field: message}`` for what is wrong with ``condition`` on ``tool_pattern``."""
    problems: dict[str, str] = {}
    tools = CONDITION_TOOLS.get(condition.kind, frozenset())
    if condition.kind not in CONDITION_TOOLS:
        return {"condition": f"unknown condition kind {condition.kind!r}"}
    if tools is not None and tool_pattern not in tools:
        names = ", ".join(sorted(tools))
        problems["condition"] = (
            f"a {condition.kind} condition applies only to {names}, not to {tool_pattern!r}"
        )
    if condition.kind in ("command", "path", "host") and not condition.values:
        problems["value"] = f"a {condition.kind} condition needs at least one entry"
    for entry in condition.values:
        if condition.kind == "command":
            if not entry.strip():
                problems["value"] = "a command pattern must not be empty"
            else:
                try:
                    _compiled_command(entry)
                except RegexProblem as exc:
                    problems["value"] = str(exc)
        elif condition.kind == "path":
            try:
                compile_glob(entry)
            except (GlobProblem, RegexProblem) as exc:
                problems["value"] = str(exc)
        elif condition.kind == "host" and not _HOST.match(entry):
            problems["value"] = (
                f"host {entry!r} must be a lower-case name such as example.com or *.example.com"
            )
    if condition.kind == "pointer":
        try:
            parse_pointer(condition.pointer)
        except ValueError as exc:
            problems["pointer"] = str(exc)
        if condition.op == "equals":
            try:
                json.loads(condition.value)
            except ValueError:
                problems["value"] = (
                    f"value {condition.value!r} must be JSON (a string in double quotes)"
                )
        elif condition.op == "matches":
            try:
                compile_pattern(condition.value, field="value")
            except RegexProblem as exc:
                problems["value"] = str(exc)
        else:
            problems["op"] = f"unknown comparison {condition.op!r}; use equals or matches"
    return problems
