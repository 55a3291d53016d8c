"""Tool error messages name paths the way the model and the person see them.

An exception's text often carries an absolute path (``PermissionError: [Errno 13]
Permission denied: '/srv/openprogram/var/workspaces/7/notes.md'``). That text goes to
the model and to the chat, and the server's layout (its data directory, other users'
workspace folders, where the code is installed) is nobody's business there.
:func:`redact_server_paths` rewrites it: paths inside the turn's workspace become
workspace-relative (``notes.md``, ``.`` for the root), and anything else under a
server directory becomes a placeholder (``<workspaces>/…``, ``<results>/…``,
``<data>/…``, ``<server>/…``). Every tool error a program produces passes through it
(``openprogram.programs.execution``).
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

__all__ = ["redact_server_paths"]

_APP_DIR = Path(__file__).resolve().parent.parent.parent


def _workspace_roots() -> list[Path]:
    from openprogram.workspace import current_workspace

    try:
        workspace = current_workspace()
    except Exception:  # no usable workspace: nothing of it can appear in the text
        return []
    roots = {workspace}
    with contextlib.suppress(OSError, RuntimeError):
        roots.add(workspace.resolve())
    return list(roots)


def _server_dirs() -> list[tuple[Path, str]]:
    from openprogram.config import get_config

    config = get_config()
    dirs = [
        (config.workspaces_dir or config.home / "workspaces", "<workspaces>"),
        (config.results_dir, "<results>"),
        (config.home, "<data>"),
        (_APP_DIR, "<server>"),
    ]
    return [(d, label) for d, label in dirs if str(d) not in ("", "/")]


def _replace_prefix(text: str, prefix: Path, label: str | None) -> str:
    """Replace ``prefix`` (a whole path or the start of one) with ``label``.

    ``label=None`` makes what follows relative: ``<prefix>/a/b`` → ``a/b`` and the
    prefix alone → ``.``. A prefix only counts at a path boundary, so ``/ws`` does not
    match inside ``/ws-evil``.
    """
    pattern = re.compile(re.escape(str(prefix).rstrip("/")) + r"(/|(?![\w.-]))")

    def swap(match: re.Match[str]) -> str:
        if label is None:
            return "" if match.group(1) == "/" else "."
        return label + match.group(1)

    return pattern.sub(swap, text)


def redact_server_paths(text: str) -> str:
    """``text`` with the turn's workspace made relative and server directories hidden."""
    if "/" not in text:
        return text
    # Longest first: the workspace sits inside <workspaces>, which sits inside <data>.
    for root in sorted(_workspace_roots(), key=lambda p: len(str(p)), reverse=True):
        text = _replace_prefix(text, root, None)
    for directory, label in sorted(_server_dirs(), key=lambda d: len(str(d[0])), reverse=True):
        text = _replace_prefix(text, directory, label)
    return text
