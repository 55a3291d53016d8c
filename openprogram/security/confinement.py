"""One confined process, start to finish: cgroup, rlimits, bubblewrap, then what it hit.

The argv :func:`confine` builds runs, in this order (each step ``exec``\\ s the next):

1. ``/bin/sh`` joining the call's cgroup (:mod:`openprogram.security.cgroups`), when the
   host has one — while still root, when the server is. With ``pooled`` and a launcher
   parked (:mod:`openprogram.security.sandbox_pool`) this step is gone: the launcher is
   already in a fresh cgroup of its own and ``exec``\\ s the rest, from step 2, unchanged;
2. ``prlimit`` with the per-process limits (:mod:`openprogram.security.sandbox_limits`);
3. when the server is root: ``unshare --mount`` and ``mount --bind`` of the workspace
   on a fixed path the sandbox user can reach (only in this call's mount namespace), then
   ``setpriv`` switching for good to the unprivileged sandbox user
   (:mod:`openprogram.security.sandbox_user`);
4. ``bwrap`` (:func:`openprogram.security.sandbox.sandbox_argv`) with ``/tmp`` a tmpfs
   of the configured size;
5. with ``report_tmp`` (a ``sh -c`` / ``bash -c`` command), an ``EXIT`` trap in that shell that
   reports on a pipe whether ``/tmp`` is full (the tmpfs is gone afterwards, so it can
   only be seen from inside).

:meth:`Confined.outcome` turns the exit code and those reports into the sentence a
person reads; :meth:`Confined.close` removes the cgroup. Nothing here waits on the
process: the caller spawns ``argv`` with ``pass_fds``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from openprogram.config import get_config
from openprogram.security.cgroups import CallCgroup, cgroup_support, cgroup_sweep
from openprogram.security.sandbox import sandbox_argv, sandbox_problem
from openprogram.security.sandbox_limits import (
    SandboxLimits,
    format_size,
    limit_sentence,
    prlimit_prefix,
)
from openprogram.security.sandbox_pool import Launcher, sandbox_pool
from openprogram.security.sandbox_user import (
    SandboxUser,
    sandbox_user,
    setpriv_prefix,
    workspace_hand_over,
)

__all__ = ["Confined", "confine", "sandbox_report", "sandbox_status"]

logger = logging.getLogger(__name__)

_WORKSPACE_MOUNT = (
    "/run/openprogram-sandbox" if os.path.isdir("/run") else "/tmp/openprogram-sandbox"
)
"""An empty root-owned directory; each root server's call binds its workspace here in a
mount namespace of its own."""
_MOUNT = (
    'while [ "$1" != -- ]; do mount --bind -- "$1" "$2" || { echo "openprogram: could not '
    'mount $1" >&2; exit 125; }; shift 2; done; shift; exec "$@"'
)

_TMP_REPORT = "trap 'printf x 2>/dev/null >/tmp/.openprogram-probe || echo tmp-full >&{fd}' EXIT; "
"""Prefixed to a ``sh -c`` script: once it ends, a one-byte write tells whether /tmp is full
(the tmpfs is gone afterwards, so it can only be seen from inside). A builtin in an EXIT
trap of the command's own shell: no extra process, and the exit status is kept."""


@dataclass
class Confined:
    """A confined command ready to spawn: ``argv`` with ``pass_fds``, then outcome and close."""

    argv: list[str]
    limits: SandboxLimits
    cgroup: CallCgroup | None = None
    pass_fds: tuple[int, ...] = ()
    launcher: Launcher | None = None
    """A parked launcher to start ``argv`` with (``launcher.start``), or None: spawn ``argv``."""
    _report_read: int | None = field(default=None, repr=False)

    def spawned(self) -> None:
        """Close our copy of the report pipe's write end (the child holds its own now)."""
        for fd in self.pass_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.pass_fds = ()

    def outcome(self, exit_code: int, output: str = "") -> str | None:
        """The sentence for the limit the finished command hit, or None."""
        oom_kills, process_limit_hits = self.cgroup.counters() if self.cgroup else (0, 0)
        return limit_sentence(
            limits=self.limits,
            exit_code=exit_code,
            output=output,
            oom_kills=oom_kills,
            process_limit_hits=process_limit_hits,
            tmp_full=self._tmp_full(),
        )

    def _tmp_full(self) -> bool:
        if self._report_read is None:
            return False
        os.set_blocking(self._report_read, False)
        try:
            return b"tmp-full" in os.read(self._report_read, 64)
        except BlockingIOError:
            return False

    def close(self) -> None:
        """Release the pipe and remove the call's cgroup (waits briefly for it to empty)."""
        self.spawned()
        launcher, self.launcher = self.launcher, None
        if launcher is not None and not launcher.started:
            launcher.discard()  # never started: it exits on EOF, running nothing
        if self._report_read is not None:
            os.close(self._report_read)
            self._report_read = None
        if self.cgroup is not None:
            self.cgroup.remove()
            self.cgroup = None
        if launcher is not None:
            launcher.finished()


def confine(
    command: Sequence[str],
    *,
    workspace: Path,
    limits: SandboxLimits,
    network: bool = False,
    bwrap: str = "bwrap",
    report_tmp: bool = False,
    user: SandboxUser | None = None,
    read_only: Sequence[tuple[str, str]] = (),
    pooled: bool = False,
) -> Confined:
    """Everything needed to run ``command`` confined to ``workspace`` within ``limits``.

    ``user`` defaults to the configured sandbox user (:mod:`openprogram.security.sandbox_user`);
    when the server is root the workspace is handed over to it first. ``read_only``:
    ``(source, path)`` pairs bound read-only besides the system's directories. ``pooled``: take a
    parked launcher already in a fresh cgroup when one is ready (:mod:`~openprogram.security.
    sandbox_pool`; the caller then starts it with ``Confined.launcher.start``), else the direct
    path. Blocking file-system work (the hand-over walk, the cgroup): call it off the event loop.
    """
    launcher = sandbox_pool().take(limits) if pooled else None
    try:
        return _confine(
            command,
            workspace=workspace,
            limits=limits,
            network=network,
            bwrap=bwrap,
            report_tmp=report_tmp,
            user=user,
            read_only=read_only,
            launcher=launcher,
        )
    except BaseException:
        if launcher is not None:
            launcher.discard()
            launcher.finished()
        raise


def _confine(
    command: Sequence[str],
    *,
    workspace: Path,
    limits: SandboxLimits,
    network: bool,
    bwrap: str,
    report_tmp: bool,
    user: SandboxUser | None,
    read_only: Sequence[tuple[str, str]],
    launcher: Launcher | None,
) -> Confined:
    config = get_config()
    if user is None:
        user = sandbox_user(uid=config.sandbox_uid, gid=config.sandbox_gid)
    workspace_hand_over(
        workspace, user, workspaces=config.workspaces_dir or config.home / "workspaces"
    )
    inner = list(command)
    report_read: int | None = None
    pass_fds: tuple[int, ...] = ()
    if report_tmp:
        if len(inner) != 3 or inner[1] != "-c":
            raise ValueError("report_tmp needs a shell command: [shell, '-c', script]")
        if launcher is not None:  # its report pipe is already open in the launcher
            report_write = launcher.report_fd
        else:
            report_read, report_write = os.pipe()
            pass_fds = (*pass_fds, report_write)
        inner[2] = _TMP_REPORT.format(fd=report_write) + inner[2]
    reachable = (
        [(_reachable(index, source), path) for index, (source, path) in enumerate(read_only)]
        if user.switch
        else list(read_only)
    )
    boxed = sandbox_argv(
        inner,
        workspace=workspace,
        network=network,
        bwrap=bwrap,
        tmp_bytes=limits.tmp_bytes,
        user=user,
        workspace_source=_WORKSPACE_MOUNT if user.switch else None,
        read_only=reachable,
    )
    if launcher is not None:  # already in the call's fresh cgroup: no join on the call's path
        cgroup: CallCgroup | None = launcher.cgroup
        prefix: list[str] = []
        report_read = launcher.hand_over("report")
    else:
        cgroup = _call_cgroup(limits)
        prefix = cgroup.join_prefix() if cgroup is not None else []
    # The cgroup is joined while still root; the switch to the sandbox user comes after.
    return Confined(
        argv=[
            *prefix,
            *prlimit_prefix(limits),
            *(_workspace_mount_prefix(workspace, read_only) if user.switch else []),
            *setpriv_prefix(user),
            *boxed,
        ],
        limits=limits,
        cgroup=cgroup,
        pass_fds=pass_fds,
        launcher=launcher,
        _report_read=report_read,
    )


def _reachable(index: int, source: str) -> str:
    """An empty root-owned mount point (of ``source``'s kind) the sandbox user can reach."""
    is_dir = os.path.isdir(source)
    point = os.path.join(f"{_WORKSPACE_MOUNT}-ro", f"{index}{'d' if is_dir else 'f'}")
    os.makedirs(os.path.dirname(point), mode=0o755, exist_ok=True)
    if is_dir:
        os.makedirs(point, mode=0o755, exist_ok=True)
    elif not os.path.exists(point):
        with open(point, "a"):
            pass
    return point


def _workspace_mount_prefix(workspace: Path, read_only: Sequence[tuple[str, str]]) -> list[str]:
    """As root, in a private mount namespace: the workspace bound at a path anyone may reach.

    bwrap, already the sandbox user, must find the workspace by path, and the data
    directory above it is root's alone (0700); so with the ``read_only`` sources (an MCP
    server's install prefix may live under ``/root``), each at a point of its own. This mount lives only in the call's own
    mount namespace; the host never sees it.
    """
    os.makedirs(_WORKSPACE_MOUNT, mode=0o755, exist_ok=True)
    return [
        shutil.which("unshare") or "unshare",
        "--mount",
        "--propagation",
        "private",
        "--",
        "/bin/sh",
        "-c",
        _MOUNT,
        "sh",
        str(Path(workspace).resolve()),
        _WORKSPACE_MOUNT,
        *(
            arg
            for index, (source, _) in enumerate(read_only)
            for arg in (source, _reachable(index, source))
        ),
        "--",
    ]


def _call_cgroup(limits: SandboxLimits) -> CallCgroup | None:
    support = cgroup_support()
    if support.version is None:
        return None
    try:
        return CallCgroup.create(support, limits)
    except OSError as exc:
        logger.warning("sandbox: could not create the call's cgroup (%s); rlimits only", exc)
        return None


def sandbox_status(limits: SandboxLimits, *, bwrap: str = "bwrap") -> list[tuple[str, str, str]]:
    """``(limit, value, how it is enforced here — or why it is not)`` for each sandbox limit."""
    problem = sandbox_problem(bwrap)
    if problem is not None:
        return [("sandbox", "unavailable", f"{problem}; bash is not offered")]
    support = cgroup_support()
    cgroup = f"cgroup {support.version}" if support.version else None
    without = f"not enforced: {support.reason}"
    return [
        (
            "memory",
            format_size(limits.memory_bytes),
            f"the whole call ({cgroup}); {format_size(limits.address_space_bytes)} "
            "address space per process (rlimit)"
            if cgroup
            else f"{without}; only {format_size(limits.address_space_bytes)} address space "
            "per process (rlimit)",
        ),
        ("processes", str(limits.processes), f"the whole call ({cgroup})" if cgroup else without),
        ("CPU", f"{limits.cpu_seconds} s", "per process (rlimit, SIGXCPU then SIGKILL)"),
        ("largest file", format_size(limits.file_bytes), "per process (rlimit, SIGXFSZ)"),
        ("/tmp", format_size(limits.tmp_bytes), "private tmpfs per call"),
        _user_row(),
        _pool_row(pooled=get_config().sandbox_pool, cgroup=cgroup),
    ]


def _pool_row(*, pooled: int, cgroup: str | None) -> tuple[str, str, str]:
    if not pooled:
        return ("launchers", "0", "none parked (pool off): each call joins its cgroup itself")
    if cgroup is None:
        return ("launchers", "0", "none parked: without a cgroup there is no join to save")
    how = f"parked per server process, each in a fresh {cgroup}: a call waits for no join"
    return ("launchers", str(pooled), how)


def _user_row() -> tuple[str, str, str]:
    config = get_config()
    try:
        user = sandbox_user(uid=config.sandbox_uid, gid=config.sandbox_gid)
    except ValueError as exc:
        return ("user", "none", str(exc))
    how = (
        "the server is root: each call switches to it (setpriv) before bwrap"
        if user.switch
        else "the server's own user, mapped to itself"
    )
    return ("user", f"{user.uid}:{user.gid}", how)


def sandbox_report(limits: SandboxLimits | None = None) -> None:
    """Log, once at start-up, which limits are in force; remove cgroups a dead server left."""
    config = get_config()
    limits = limits or config.sandbox_limits
    support = cgroup_support()
    if support.version is not None:
        cgroup_sweep(support)
    rows = sandbox_status(limits, bwrap=config.bwrap)
    summary = "; ".join(f"{name} {value}: {how}" for name, value, how in rows)
    if support.version is None or len(rows) == 1:
        logger.warning("sandbox limits: %s", summary)
    else:
        logger.info("sandbox limits: %s", summary)
