"""Workspace confinement: turn a path the model wrote into a real path inside the workspace.

Contract of :func:`resolve_in_workspace`, step by step:

1. The workspace itself is resolved first (symlinks followed, it must exist and be a
   directory), so a workspace reached through a symlink is compared by its real location.
2. The user path must be a non-empty ``str`` without NUL bytes; a leading ``~`` is
   refused outright (home expansion never happens, so ``~`` cannot smuggle a path out).
3. A relative path is joined onto the real workspace; an absolute path is taken as is.
4. The joined path is resolved with symlinks followed on every component that exists,
   exactly as the kernel would walk it (``link/..`` climbs from the link's target, a
   dangling symlink is followed to where it points). Components that do not exist yet
   (a new file, new parent directories) are kept lexically. A symlink loop is refused,
   and so is any result that is not a fixed point of resolution (resolving it again
   would change it: Python stops resolving after a loop and keeps the rest lexically).
5. The result must be the workspace or lie below it, compared with
   :meth:`Path.is_relative_to` on the two resolved paths — never a string prefix, so
   ``/ws-evil`` is not inside ``/ws``.
6. With ``must_exist=True`` a missing target raises :class:`FileNotFoundError`
   (a plain error the model can act on, not a refusal).

Every refusal raises :class:`PathOutsideWorkspace` (a :class:`PermissionError`) whose
message names the path as written and why it was refused. The check is made at call
time; a symlink swapped in between the check and the use (by a shell command the person
approved) is outside what this module can see.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["PathOutsideWorkspace", "resolve_in_workspace", "resolve_workspace_root"]


class PathOutsideWorkspace(PermissionError):
    """A path was refused because it does not stay inside the workspace."""


def resolve_workspace_root(workspace: Path) -> Path:
    """The workspace's real location; it must exist and be a directory."""
    try:
        root = Path(workspace).resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        # The message reaches the model: the reason, never the server's path.
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise PathOutsideWorkspace(f"the workspace is not usable: {reason}") from exc
    if not root.is_dir():
        raise PathOutsideWorkspace("the workspace is not a directory")
    return root


def _refuse(user_path: str, why: str) -> PathOutsideWorkspace:
    return PathOutsideWorkspace(f"path {user_path!r} is refused: {why}")


def resolve_in_workspace(workspace: Path, user_path: str, *, must_exist: bool = False) -> Path:
    """Return the real path ``user_path`` names inside ``workspace``, or refuse it."""
    root = resolve_workspace_root(workspace)
    if not isinstance(user_path, str):
        raise _refuse(repr(user_path), f"a path must be a string, not {type(user_path).__name__}")
    if user_path == "":
        raise _refuse(user_path, "it is empty; use '.' for the workspace itself")
    if "\x00" in user_path:
        raise _refuse(user_path, "it contains a NUL byte")
    if user_path.startswith("~"):
        raise _refuse(user_path, "'~' is not expanded; use a path relative to the workspace")
    candidate = Path(user_path)
    joined = candidate if candidate.is_absolute() else root / candidate
    try:
        # Non-strict resolve follows every existing symlink (dangling ones too) and
        # keeps missing tail components as written; loops raise RuntimeError.
        resolved = joined.resolve(strict=False)
    except RuntimeError:
        raise _refuse(user_path, "it goes through a symlink loop") from None
    except OSError as exc:
        raise _refuse(user_path, f"it cannot be resolved ({exc.strerror or exc})") from None
    # Python's non-strict resolve gives up quietly inside a symlink loop and keeps the
    # rest of the path lexically, so ``loop/../link`` would come back with ``link``
    # unresolved. A true resolution is a fixed point: resolving it again changes nothing.
    try:
        again = resolved.resolve(strict=False)
    except (RuntimeError, OSError):
        again = None
    if again != resolved:
        raise _refuse(user_path, "it goes through a symlink loop")
    if not resolved.is_relative_to(root):
        raise _refuse(
            user_path,
            "it resolves outside the workspace; use a path relative to the workspace",
        )
    if must_exist and not resolved.exists():
        raise FileNotFoundError(f"no such file or directory in the workspace: {user_path!r}")
    return resolved
