"""Which directory a tool call may touch: the current turn's workspace.

Resolution order for :func:`current_workspace`:

1. the running turn's ``TurnContext.workspace`` (the host decided it);
2. the configured single shared workspace (``Config.workspace``, a desktop install
   pointed at a real project folder);
3. the turn's user's own directory, ``<workspaces_dir>/<user id>``;
4. outside any turn, ``<workspaces_dir>/default``.

The directory is created (owner-only) when missing. User ids become one path
component and are checked so they can never climb out of the workspaces directory:
one user's turn never reaches another user's workspace.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from openprogram.agent.context import get_turn
from openprogram.config import get_config

__all__ = ["current_workspace", "workspace_for_user", "workspace_path_for_user", "workspaces_dir"]

_USER_COMPONENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}$")


def workspaces_dir() -> Path:
    config = get_config()
    return config.workspaces_dir or config.home / "workspaces"


def _ensure(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    return directory.resolve()


def workspace_for_user(user_id: str | int | None) -> Path:
    """The workspace a user's turns run in (the shared one when configured)."""
    config = get_config()
    if config.workspace is not None:
        return _ensure(config.workspace)
    if user_id is None:
        return _ensure(workspaces_dir() / "default")
    component = str(user_id)
    if not _USER_COMPONENT.match(component):
        raise ValueError(f"user id {component!r} cannot name a workspace directory")
    return _ensure(workspaces_dir() / component)


def workspace_path_for_user(user_id: str | int | None) -> Path:
    """:func:`workspace_for_user`'s answer, worked out (and the directory created) once
    per user and configuration, then remembered: a turn's start names the directory,
    it does not need a ``mkdir`` and a symlink walk every time. Whoever touches files
    there asks :func:`current_workspace`, which makes sure it exists again."""
    return _workspace_path(get_config().workspace, workspaces_dir(), user_id)


@functools.lru_cache(maxsize=4096)
def _workspace_path(workspace: Path | None, directory: Path, user_id: str | int | None) -> Path:
    """Keyed by everything :func:`workspace_for_user`'s answer depends on."""
    return workspace_for_user(user_id)


def current_workspace() -> Path:
    """The workspace for the running turn, or the default one outside a turn."""
    turn = get_turn()
    if turn is not None and turn.workspace is not None:
        return _ensure(Path(turn.workspace))
    return workspace_for_user(turn.user_id if turn is not None else None)
