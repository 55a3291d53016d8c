"""A stdio MCP server's command, confined like the bash tool (:func:`confine`).

Contract, for a server whose config says ``confined`` (the default):

1. the same chain as a bash call: the server's own cgroup, ``prlimit``, (``setpriv`` to the
   sandbox user when the web process is root), then ``bwrap`` — no data directory, no
   database, no other user's workspace, no server code;
2. its install prefix is bound read-only at its own path: the directory holding the
   command (``bin`` means its parent: ``.tools/node``, a venv), both as named and as the
   symlinks resolve, and each absolute file its arguments name (a script); a command or
   script inside an npm install brings the whole tree (its outermost ``node_modules``),
   since Node finds the modules it imports by walking up it;
3. its working folder and ``HOME`` is ``<data directory>/mcp/<name>`` (read-write, kept
   across restarts). A shared server has one folder for every user of it;
4. network off (a private, empty network namespace) unless the config's ``network``;
5. :data:`MCP_SERVER_LIMITS` (below), with a far larger address space than ``bash``'s. CPU time is cumulative per process, so an idle
   server spends none of it; a server that burns an hour of CPU is killed and the
   connection's supervisor restarts it;
6. ``--die-with-parent`` follows the thread that spawned it: the manager's event-loop
   thread (``openprogram-mcp``) lives as long as the process, so a ``kill -9`` of the
   web process takes the server with it.

If the sandbox cannot start here, a confined server does not start (its status says
why); it is never run unconfined instead.
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

from openprogram.config import get_config
from openprogram.mcp.config import MCPServerConfig
from openprogram.security.confinement import Confined, confine
from openprogram.security.sandbox import sandbox_problem
from openprogram.security.sandbox_limits import SandboxLimits
from openprogram.security.sandbox_user import sandbox_user

__all__ = ["MCP_SERVER_LIMITS", "SandboxUnavailableError", "confined_server", "server_folder"]

MCP_SERVER_LIMITS = SandboxLimits(
    memory_bytes=1 << 30,
    cpu_seconds=3600,
    processes=256,
    file_bytes=1 << 30,
    tmp_bytes=256 << 20,
    address_space_factor=64,
)
"""Per server process: 1 GiB memory (cgroup), 3600 s CPU in total, 256 processes, 1 GiB
largest file, 256 MiB /tmp. Address space 64 GiB, not the shell's 3 GiB: V8 reserves about
10 GiB of it for each WebAssembly memory (Node's own ``fetch`` makes one), so a Node server
died at its first request under 3 GiB (seen with server-everything); what it really uses is
the cgroup's 1 GiB."""


_SYSTEM = frozenset({"", "/", "/usr", "/bin", "/sbin", "/usr/local"})
"""Prefixes never bound whole: the system's directories are already there, read-only."""


class SandboxUnavailableError(RuntimeError):
    """The sandbox cannot start here, so a confined server is not started."""


def server_folder(name: str) -> Path:
    """``<data directory>/mcp/<name>``, created; the server's working folder and HOME."""
    folder = get_config().home / "mcp" / name
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder


def _prefix(path: str) -> str:
    directory = os.path.dirname(path)
    return os.path.dirname(directory) if os.path.basename(directory) == "bin" else directory


def _package_tree(path: str) -> str | None:
    """The outermost ``node_modules`` above ``path``: an npm install, whose modules a script
    in it imports from anywhere in that tree (Node walks up to find them)."""
    parts = path.split(os.sep)
    if "node_modules" not in parts:
        return None
    return os.sep.join(parts[: parts.index("node_modules") + 1])


def _interpreter(path: str) -> str | None:
    """The ``#!`` interpreter of a script (a venv's console script names its venv's python)."""
    try:
        with open(path, "rb") as file:
            first = file.readline(256)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode("utf-8", "replace").split()
    return words[0] if words and os.path.isabs(words[0]) else None


def _read_only(command: str, args: tuple[str, ...]) -> list[tuple[str, str]]:
    """``(source, path)``: the command's install prefix (as named and resolved), its
    script interpreter's, and the absolute files its arguments name."""
    named = os.path.abspath(shutil.which(command) or command)
    programs = [named]
    if (interpreter := _interpreter(named)) is not None:
        programs.append(interpreter)
    binds: dict[str, str] = {}
    for program in programs:
        for prefix in (_prefix(program), _prefix(os.path.realpath(program))):
            if prefix not in _SYSTEM and os.path.isdir(prefix):
                binds[prefix] = os.path.realpath(prefix)
    files = [arg for arg in args if os.path.isabs(arg) and os.path.isfile(arg)]
    for arg in files:
        binds[arg] = os.path.realpath(arg)
    for path in (*programs, *files):
        for named in (path, os.path.realpath(path)):
            if (tree := _package_tree(named)) is not None and os.path.isdir(tree):
                binds[tree] = os.path.realpath(tree)
    return [(source, path) for path, source in binds.items()]


def confined_server(config: MCPServerConfig) -> Confined:
    """The confined argv for ``config``'s stdio server (blocking: call it off the loop)."""
    if shutil.which(config.command) is None:
        # Said here, as an unconfined start would: inside, it is only bwrap's execvp error.
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), config.command)
    settings = get_config()
    problem = sandbox_problem(settings.bwrap)
    if problem is not None:
        raise SandboxUnavailableError(f"MCP server {config.name!r} is confined, but {problem}")
    folder = server_folder(config.name)
    user = sandbox_user(uid=settings.sandbox_uid, gid=settings.sandbox_gid)
    if user.switch:
        os.chown(folder, user.uid, user.gid)
    return confine(
        [config.command, *config.args],
        workspace=folder,
        limits=MCP_SERVER_LIMITS,
        network=config.network,
        bwrap=settings.bwrap,
        user=user,
        read_only=_read_only(config.command, config.args),
    )
