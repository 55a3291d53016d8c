"""Who a sandboxed process is on the host: never root.

Contract, step by step:

1. a server running as an ordinary user runs the sandbox as that same user, mapped to the
   same uid and gid inside (``--unshare-user --uid --gid``): nothing to switch;
2. a server running as root switches, in the process it spawns, to the unprivileged
   ``Config.sandbox_uid``/``sandbox_gid`` *before* ``bwrap`` starts — ``setpriv --reuid
   --regid --clear-groups`` (util-linux, an ``exec`` prefix placed after the cgroup join,
   which needs root). ``bwrap --uid/--gid`` alone would only change what the process sees:
   on the host it would still be uid 0;
3. either way ``bwrap --disable-userns`` stops the command from making user namespaces of
   its own;
4. with a switch, the workspace must be the sandbox user's to write in: before each call,
   :func:`workspace_hand_over` gives that user every entry of the workspace it does not
   own yet (what the server's file tools and uploads made as root since the last call).
   It walks with directory descriptors and never follows a symlink; a non-directory with
   more than one hard link is left alone (it may be a file from elsewhere). The server,
   as root, still reads and writes everything. Only workspaces under the per-user
   workspaces directory are handed over — never a shared folder the operator configured.
"""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SandboxUser", "sandbox_user", "setpriv_prefix", "workspace_hand_over"]


@dataclass(frozen=True)
class SandboxUser:
    """The host uid/gid a sandboxed process runs as; ``switch``: the server is root."""

    uid: int
    gid: int
    switch: bool


def sandbox_user(*, uid: int, gid: int) -> SandboxUser:
    """``uid``/``gid`` (the configured sandbox user) when the server is root, else its own."""
    if os.geteuid() == 0:
        if uid == 0 or gid == 0:
            raise ValueError("the sandbox user must not be root (uid and gid 0)")
        return SandboxUser(uid, gid, switch=True)
    return SandboxUser(os.getuid(), os.getgid(), switch=False)


def setpriv_prefix(user: SandboxUser, *, setpriv: str = "setpriv") -> list[str]:
    """``setpriv ... --`` that becomes ``user`` for good, or nothing when already so."""
    if not user.switch:
        return []
    return [
        shutil.which(setpriv) or setpriv,
        f"--reuid={user.uid}",
        f"--regid={user.gid}",
        "--clear-groups",
        "--",
    ]


def workspace_hand_over(workspace: Path, user: SandboxUser, *, workspaces: Path) -> int:
    """Give ``user`` what it does not own in ``workspace`` (see the module doc); how many."""
    if not user.switch:
        return 0
    root = Path(workspace).resolve()
    if not root.is_relative_to(Path(workspaces).resolve()) or root == Path(workspaces).resolve():
        return 0
    changed = 0
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        info = os.fstat(fd)
        if (info.st_uid, info.st_gid) != (user.uid, user.gid):
            os.fchown(fd, user.uid, user.gid)
            changed += 1
    finally:
        os.close(fd)
    for _path, dirs, files, dir_fd in os.fwalk(root, follow_symlinks=False):
        for name in (*dirs, *files):
            try:
                info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                if (info.st_uid, info.st_gid) == (user.uid, user.gid):
                    continue
                if not stat.S_ISDIR(info.st_mode) and info.st_nlink > 1:
                    continue
                os.chown(name, user.uid, user.gid, dir_fd=dir_fd, follow_symlinks=False)
                changed += 1
            except FileNotFoundError:
                continue  # removed meanwhile
    return changed
