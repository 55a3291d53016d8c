"""Path globs for file-tool conditions, matched on a normalised workspace-relative path.

Contract:

1. :func:`normalised_path` turns the path a file tool was given into the relative path
   the workspace resolver opens (its own ``path_parts``): ``.`` and empty components
   dropped, ``""`` for the workspace itself. An absolute path, a ``~`` start, a NUL byte or **any** ``..``
   component gives None: such a path is never matched by an *allow* glob (it falls
   through to the tool's default), and always by a *deny* or *ask* glob. So
   ``docs/../secrets/key`` never passes a ``docs/**`` allow.
2. A glob (:func:`compile_glob`) is relative, ``/``-separated, with ``*`` and ``?``
   inside one component and ``**`` as a whole component for any number of them
   (``docs/**`` matches ``docs`` and everything below it). It is compiled for RE2,
   so matching is linear in the path's length.
3. :func:`may_reach` is for tools that walk a directory (``list_dir``, ``glob``,
   ``grep``): the walk reaches what a glob names when the walked path is the glob's
   literal directory prefix or above it. A deny or ask glob applies to such walks.
"""

from __future__ import annotations

import re

from openprogram.programs._rule_regex import Pattern, compile_pattern

__all__ = [
    "GlobProblem",
    "compile_glob",
    "glob_subject",
    "literal_prefix",
    "may_reach",
    "normalised_path",
]


class GlobProblem(ValueError):
    """A glob that cannot be a path condition; the message says why."""


_WILD = frozenset("*?[")


def normalised_path(path: object) -> str | None:
    """The workspace-relative path a file tool opens, or None when it cannot be trusted.

    The file tools' own reading (``security.workspace_fs.path_parts``, the race-free
    resolver's step 1), so a condition sees exactly the names the tool will open; a
    path the resolver refuses (absolute, ``~``, NUL, any ``..``) is None here.
    """
    from openprogram.security.workspace_fs import WorkspacePathRefused, path_parts

    if path == ".":
        return ""
    try:
        return "/".join(path_parts(path))  # type: ignore[arg-type]
    except WorkspacePathRefused:
        return None


def _component_regex(component: str) -> str:
    out: list[str] = []
    for char in component:
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        else:
            out.append(re.escape(char))
    return "".join(out)


def compile_glob(glob: str) -> Pattern:
    """The RE2 pattern of a path glob (module doc, step 2); GlobProblem when malformed.

    It is matched against :func:`glob_subject` of a normalised path: the path with a
    leading ``/`` (``""`` for the workspace itself), so each component, ``**`` included,
    reads as "a slash and a name".
    """
    if not isinstance(glob, str) or not glob.strip():
        raise GlobProblem("a path glob must not be empty")
    if glob.startswith(("/", "~")) or "\\" in glob or "\x00" in glob:
        raise GlobProblem(f"path glob {glob!r} must be relative to the workspace (no /, ~ or \\)")
    if "[" in glob or "]" in glob:
        raise GlobProblem(f"path glob {glob!r}: character classes ([...]) are not supported")
    components = [part for part in glob.split("/") if part not in ("", ".")]
    if not components:
        raise GlobProblem(f"path glob {glob!r} names no path")
    if ".." in components:
        raise GlobProblem(f"path glob {glob!r} must not contain '..'")
    regex = ""
    for component in components:
        if component == "**":
            regex += "(?:/[^/]+)*"  # zero or more whole components
        elif "**" in component:
            raise GlobProblem(f"path glob {glob!r}: '**' must be a whole path component")
        else:
            regex += "/" + _component_regex(component)
    return compile_pattern(regex, field="path glob")


def glob_subject(path: str) -> str:
    """What a compiled glob is matched against (see :func:`compile_glob`)."""
    return "/" + path if path else ""


def literal_prefix(glob: str) -> str:
    """The directories a glob names before its first wildcard (``docs/a`` of ``docs/a/*.md``)."""
    prefix: list[str] = []
    for part in (p for p in glob.split("/") if p not in ("", ".")):
        if not _WILD.isdisjoint(part):
            break
        prefix.append(part)
    return "/".join(prefix)


def may_reach(walked: str, glob: str) -> bool:
    """A walk from ``walked`` may reach what ``glob`` names (module doc, step 3)."""
    prefix = literal_prefix(glob)
    return walked == "" or prefix == walked or prefix.startswith(walked + "/")
