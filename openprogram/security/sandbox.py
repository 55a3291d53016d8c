"""Run a tool's process inside a bubblewrap sandbox: the workspace and nothing else.

Contract, step by step (:func:`sandbox_argv` builds it, :func:`sandbox_problem` checks
that it can start at all):

1. a fresh mount namespace whose root is an empty tmpfs, remounted read-only once the
   mounts below are in place: nothing of the host is visible unless listed here, and
   nothing outside the workspace and ``/tmp`` can be written;
2. the system's programs and libraries, read-only: ``/usr`` (and ``/bin``, ``/lib``,
   ``/lib64``, ``/sbin``, as the symlinks or read-only directories they are on the
   host), and a short allow-list of ``/etc`` files a shell needs (``ld.so.cache``,
   ``passwd``, ``group``, ``localtime``, ``alternatives``, the public CA certificates)
   — never ``/etc/shadow``, ``/etc/ssl/private``, ``/root``, ``/home``, the server's
   code, the data directory, the database, the secret key, saved results or any other
   user's workspace;
3. the turn's workspace, read-write, at its real path (paths a tool reports mean the
   same thing inside and out); it is also the working directory and ``HOME``;
4. a private ``/tmp`` (tmpfs, gone with the call, of ``tmp_bytes`` when given), a fresh
   ``/proc`` and a minimal, read-only ``/dev`` whose ``/dev/shm`` is a tmpfs of at most
   64 MiB (never larger than ``/tmp``): no writable file system is unbounded;
5. new PID, IPC, UTS, cgroup and user namespaces (with ``user``: the host uid and gid
   mapped to themselves, and no nested user namespaces); all capabilities dropped; a new
   terminal session (no TIOCSTI into the server's terminal);
6. ``--die-with-parent``: if the server process dies — even ``kill -9`` — the kernel
   kills the sandbox's init, and with it every process in its PID namespace;
7. no network (a private, empty network namespace) unless the deployment opts in
   (``Config.sandbox_network``), which then also shares ``/etc/resolv.conf`` and
   ``/etc/hosts``.

If ``bwrap`` is missing or cannot create the namespaces here, :func:`sandbox_problem`
says why, and the tools that need it are not offered (layer 4) — a command is never
run unconfined.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from openprogram.security.sandbox_user import SandboxUser, sandbox_user, setpriv_prefix

__all__ = ["sandbox_argv", "sandbox_problem"]

_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC_FILES = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/localtime",
    "/etc/ssl/certs",  # not /etc/ssl/private: the sandbox may run as uid 0 (owner)
    "/etc/ssl/openssl.cnf",
    "/etc/ca-certificates",
    "/etc/ca-certificates.conf",
    "/etc/bash.bashrc",
    "/etc/inputrc",
)
_NETWORK_ETC_FILES = ("/etc/resolv.conf", "/etc/hosts", "/etc/host.conf", "/etc/gai.conf")
_PROBE_TIMEOUT_S = 10.0
_SHM_BYTES = 64 << 20


def _system_mounts() -> list[str]:
    args: list[str] = []
    for path in _SYSTEM_DIRS:
        if os.path.islink(path):  # usr-merged systems: /bin -> usr/bin
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


def _etc_mounts(network: bool) -> list[str]:
    args: list[str] = []
    for path in (*_ETC_FILES, *(_NETWORK_ETC_FILES if network else ())):
        if os.path.lexists(path):
            args += ["--ro-bind-try", path, path]
    return args


def sandbox_argv(
    command: Sequence[str],
    *,
    workspace: Path,
    network: bool = False,
    bwrap: str = "bwrap",
    tmp_bytes: int | None = None,
    user: SandboxUser | None = None,
    workspace_source: str | None = None,
    read_only: Sequence[tuple[str, str]] = (),
) -> list[str]:
    """The bwrap argv that runs ``command`` confined to ``workspace`` (see the module doc).

    ``tmp_bytes`` caps the private ``/tmp`` (bwrap's ``--size``, which must come directly
    before its ``--tmpfs``); writers past it get ``ENOSPC``. ``user``: the uid and gid the
    process has on the host (see :mod:`openprogram.security.sandbox_user`), mapped to
    themselves inside a new user namespace that the command cannot nest.
    ``workspace_source``: where bwrap finds the workspace when not at its real path (a
    root server's mount of it that the sandbox user can reach; see ``confinement``).
    ``read_only``: ``(source, path)`` pairs bound read-only (a stdio MCP server's install
    prefix and the script its command line names; see :mod:`openprogram.mcp.stdio_confinement`).
    """
    root = str(Path(workspace).resolve())
    users = (
        ["--unshare-user", "--uid", str(user.uid), "--gid", str(user.gid), "--disable-userns"]
        if user is not None
        else ["--unshare-user-try"]
    )
    bind = ["--bind", workspace_source or root]
    tmp_size = ["--size", str(tmp_bytes)] if tmp_bytes is not None else []
    # bwrap's /dev is a writable tmpfs as large as the host allows: freeze it, and give
    # /dev/shm (POSIX semaphores, shared memory) a small tmpfs of its own.
    shm_size = str(min(tmp_bytes or _SHM_BYTES, _SHM_BYTES))
    args = [
        shutil.which(bwrap) or bwrap,
        "--die-with-parent",
        "--new-session",
        *users,
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--cap-drop",
        "ALL",
        "--tmpfs",
        "/",
        *_system_mounts(),
        *_etc_mounts(network),
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        shm_size,
        "--tmpfs",
        "/dev/shm",
        "--remount-ro",
        "/dev",
        *tmp_size,
        "--tmpfs",
        "/tmp",
        *bind,
        root,
        *(arg for source, path in read_only for arg in ("--ro-bind", source, path)),
        "--chdir",
        root,
        "--setenv",
        "HOME",
        root,
        "--hostname",
        "sandbox",
        # Last: the mount points above exist now, so the root can be frozen.
        "--remount-ro",
        "/",
    ]
    if not network:
        args.insert(args.index("--unshare-uts"), "--unshare-net")
    return [*args, "--", *command]


@functools.lru_cache(maxsize=8)
def sandbox_problem(bwrap: str = "bwrap") -> str | None:
    """None when a sandbox can start here, as the configured sandbox user; else a reason a
    person can act on. Cached (``sandbox_problem.cache_clear()`` after reconfiguring)."""
    from openprogram.config import get_config

    config = get_config()
    binary = shutil.which(bwrap)
    if binary is None:
        return (
            f"the shell sandbox is unavailable: {bwrap!r} (bubblewrap) is not installed; "
            "install the Debian package 'bubblewrap' (make run does)"
        )
    if shutil.which("prlimit") is None:
        return (
            "the shell sandbox is unavailable: 'prlimit' is not installed; "
            "install the Debian package 'util-linux'"
        )
    try:
        user = sandbox_user(uid=config.sandbox_uid, gid=config.sandbox_gid)
    except ValueError as exc:
        return f"the shell sandbox is unavailable: {exc}"
    setpriv = setpriv_prefix(user)
    if setpriv and shutil.which("setpriv") is None:
        return (
            "the shell sandbox is unavailable: 'setpriv' is not installed; "
            "install the Debian package 'util-linux'"
        )
    with tempfile.TemporaryDirectory(prefix="openprogram-probe-") as probe_dir:
        if user.switch:
            os.chown(probe_dir, user.uid, user.gid)
        argv = [
            *setpriv,
            *sandbox_argv(
                ["/bin/sh", "-c", "exit 0"], workspace=Path(probe_dir), bwrap=binary, user=user
            ),
        ]
        try:
            done = subprocess.run(
                argv, capture_output=True, timeout=_PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"the shell sandbox cannot start: {type(exc).__name__}: {exc}"
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
        return f"the shell sandbox cannot start here: bwrap said {detail[0]!r}"
    return None
