"""A cgroup per sandboxed call: its whole process tree's memory and number of processes.

Contract, step by step:

1. :func:`cgroup_support` finds, once, how this host can bound a process tree:

   - **cgroup v2** (a unified hierarchy with the ``memory`` and ``pids`` controllers, e.g.
     a systemd service with ``Delegate=yes``): the server's own cgroup must be writable.
     The server moves itself into a leaf ``openprogram-server`` (a cgroup with children
     may hold no processes) and enables ``+memory +pids`` for a sibling
     ``openprogram-sandbox``, below which each call gets its own cgroup;
   - **cgroup v1** (separate ``memory`` and ``pids`` hierarchies; root needed): each call
     gets a child of the server's own ``memory`` and ``pids`` cgroups, below
     ``openprogram-sandbox``;
   - otherwise none, with the reason; the sandbox then relies on rlimits alone and says
     so (``manage.py sandbox_check``, a log line at start-up).

2. :meth:`CallCgroup.create` makes the call's cgroup and writes its limits —
   ``memory.max``/``memory.limit_in_bytes`` (swap capped to the same), ``pids.max`` —
   *before* anything runs in it. The process joins it itself (:meth:`CallCgroup.join_prefix`,
   a ``/bin/sh`` that writes its own pid to each ``cgroup.procs`` and then ``exec``\\ s
   the rest), while it is still root, so every process it starts is counted from the
   first ``fork``. A parked launcher (:mod:`openprogram.security.sandbox_pool`) is moved in
   ahead of its call instead (:meth:`CallCgroup.move`), off the call's path.
3. After the call, :meth:`CallCgroup.counters` reads how often the memory limit killed a
   process and how often a ``fork`` was refused, and :meth:`CallCgroup.remove` waits for
   the cgroup to empty (its last process may still be exiting: pauses from 0.2 ms,
   doubling) and removes it.
   Calls left behind by a server that died are removed at the next start
   (:func:`cgroup_sweep`).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from openprogram.security.sandbox_limits import SandboxLimits

__all__ = ["CallCgroup", "CgroupSupport", "cgroup_support", "cgroup_sweep"]

logger = logging.getLogger(__name__)

_GROUP = "openprogram-sandbox"
_SERVER_LEAF = "openprogram-server"
_REMOVE_WAIT_S = 5.0
_REMOVE_FIRST_PAUSE_S = 0.0002
_REMOVE_MAX_PAUSE_S = 0.01
"""The call's last process usually leaves its cgroup within a millisecond of the wait for
it (bwrap's PID-namespace init is still exiting): a fixed 10 ms pause cost every call
~10 ms (python -m bench sandbox), so the pauses start at 0.2 ms and double."""
_JOIN = (
    'n=$1; shift; while [ "$n" -gt 0 ]; do '
    'echo $$ > "$1" || { echo "openprogram: could not join the sandbox cgroup $1" >&2; exit 125; }; '
    'shift; n=$((n - 1)); done; exec "$@"'
)


@dataclass(frozen=True)
class CgroupSupport:
    """How calls are bounded here: ``version`` None means rlimits only, ``reason`` says why."""

    version: Literal["v1", "v2"] | None
    reason: str
    bases: tuple[Path, ...] = ()
    """Where per-call cgroups are made: one directory (v2), or memory's and pids' (v1)."""


def _mounts() -> list[tuple[str, str, set[str]]]:
    """``(mount point, fstype, options)`` of every cgroup file system."""
    found = []
    with open("/proc/self/mounts", encoding="utf-8") as mounts:
        for line in mounts:
            fields = line.split()
            if len(fields) >= 4 and fields[2] in ("cgroup", "cgroup2"):
                point = fields[1].replace("\\040", " ")
                found.append((point, fields[2], set(fields[3].split(","))))
    return found


def _own_paths() -> dict[str, str]:
    """Controller (``"memory"``, ``"pids"``, ``""`` for v2) → this process's cgroup path."""
    own: dict[str, str] = {}
    with open("/proc/self/cgroup", encoding="utf-8") as lines:
        for line in lines:
            _hierarchy, controllers, path = line.rstrip("\n").split(":", 2)
            for controller in controllers.split(",") if controllers else [""]:
                own[controller] = path
    return own


def _write(path: Path, value: str) -> None:
    with open(path, "w", encoding="ascii") as handle:
        handle.write(value)


def _v1_support(mounts: list[tuple[str, str, set[str]]], own: dict[str, str]) -> CgroupSupport:
    bases: list[Path] = []
    for controller in ("memory", "pids"):
        point = next((m[0] for m in mounts if m[1] == "cgroup" and controller in m[2]), None)
        if point is None or controller not in own:
            return CgroupSupport(None, f"the cgroup v1 {controller!r} hierarchy is not mounted")
        mine = Path(point) / own[controller].lstrip("/")
        if not mine.is_dir():  # a cgroup namespace whose root is not the mount's
            mine = Path(point)
        base = mine / _GROUP
        try:
            base.mkdir(exist_ok=True)
        except OSError as exc:
            return CgroupSupport(
                None, f"cannot create cgroups in {str(mine)!r} ({exc.strerror}); run as root"
            )
        bases.append(base)
    return CgroupSupport("v1", "cgroup v1: memory and pids per call", (bases[0], bases[1]))


def _v2_support(point: str, own: dict[str, str]) -> CgroupSupport:
    mine = Path(point) / own.get("", "/").lstrip("/")
    available = set((mine / "cgroup.controllers").read_text().split())
    missing = {"memory", "pids"} - available
    if missing:
        return CgroupSupport(
            None,
            f"cgroup v2 without the {' and '.join(sorted(missing))} controller in "
            f"{str(mine)!r}; give the service Delegate=yes (docs/security.md)",
        )
    if mine.name == _SERVER_LEAF:  # set up by an earlier start of this process's unit
        mine = mine.parent
    base = mine / _GROUP
    try:
        if mine != Path(point):  # the root cgroup may hold processes and children
            leaf = mine / _SERVER_LEAF
            leaf.mkdir(exist_ok=True)
            _write(leaf / "cgroup.procs", str(os.getpid()))
            _write(mine / "cgroup.subtree_control", "+memory +pids")
        base.mkdir(exist_ok=True)
        _write(base / "cgroup.subtree_control", "+memory +pids")
    except OSError as exc:
        return CgroupSupport(
            None,
            f"cannot delegate cgroup v2 controllers in {str(mine)!r} ({exc.strerror}); "
            "give the service Delegate=yes (docs/security.md)",
        )
    return CgroupSupport("v2", "cgroup v2: memory.max and pids.max per call", (base,))


@functools.lru_cache(maxsize=1)
def cgroup_support() -> CgroupSupport:
    """How this host bounds a sandboxed call's process tree (found once, cached)."""
    try:
        mounts = _mounts()
        own = _own_paths()
        unified = next((m[0] for m in mounts if m[1] == "cgroup2"), None)
        if unified is not None and (Path(unified) / "cgroup.controllers").exists():
            controllers = set((Path(unified) / "cgroup.controllers").read_text().split())
            if {"memory", "pids"} <= controllers:
                return _v2_support(unified, own)
        if any(m[1] == "cgroup" and "memory" in m[2] for m in mounts):
            return _v1_support(mounts, own)
    except OSError as exc:
        return CgroupSupport(None, f"cannot read this process's cgroups: {exc}")
    return CgroupSupport(None, "no cgroup file system with the memory and pids controllers")


class CallCgroup:
    """One call's cgroup(s): created with their limits, joined by the call, removed after."""

    def __init__(self, support: CgroupSupport, directories: tuple[Path, ...]) -> None:
        self.support = support
        self.directories = directories

    @classmethod
    def create(cls, support: CgroupSupport, limits: SandboxLimits) -> CallCgroup:
        """Make the call's cgroup(s) with ``limits`` written; raise ``OSError`` when it cannot."""
        name = f"call-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        directories = tuple(base / name for base in support.bases)
        made: list[Path] = []
        try:
            for directory in directories:
                directory.mkdir()
                made.append(directory)
            memory = str(limits.memory_bytes)
            if support.version == "v2":
                (group,) = directories
                _write(group / "memory.max", memory)
                with contextlib.suppress(FileNotFoundError):  # no swap accounting
                    _write(group / "memory.swap.max", "0")
                _write(group / "pids.max", str(limits.processes))
            else:
                memory_group, pids_group = directories
                _write(memory_group / "memory.limit_in_bytes", memory)
                with contextlib.suppress(FileNotFoundError):  # no swap accounting
                    _write(memory_group / "memory.memsw.limit_in_bytes", memory)
                _write(pids_group / "pids.max", str(limits.processes))
        except OSError:
            for directory in made:
                with contextlib.suppress(OSError):
                    directory.rmdir()
            raise
        return cls(support, directories)

    def join_prefix(self) -> list[str]:
        """``/bin/sh -c ...`` that moves itself into the call's cgroup(s), then execs the rest."""
        procs = [str(directory / "cgroup.procs") for directory in self.directories]
        return ["/bin/sh", "-c", _JOIN, "sh", str(len(procs)), *procs]

    def move(self, pid: int) -> None:
        """Write ``pid`` to each ``cgroup.procs`` (the parked launchers' join, off the call's path)."""
        for directory in self.directories:
            _write(directory / "cgroup.procs", str(pid))

    def holds(self, pid: int) -> bool:
        """Whether ``pid`` is listed in every one of the call's ``cgroup.procs``."""
        try:
            return all(
                str(pid) in (directory / "cgroup.procs").read_text().split()
                for directory in self.directories
            )
        except OSError:
            return False

    def counters(self) -> tuple[int, int]:
        """``(processes killed for memory, forks refused at pids.max)`` so far."""
        if self.support.version == "v2":
            (group,) = self.directories
            return (
                _counter(group / "memory.events", "oom_kill"),
                _counter(group / "pids.events", "max"),
            )
        memory_group, pids_group = self.directories
        return (
            _counter(memory_group / "memory.oom_control", "oom_kill"),
            _counter(pids_group / "pids.events", "max"),
        )

    def remove(self, *, wait: float = _REMOVE_WAIT_S) -> bool:
        """Remove the cgroup(s) once empty; False (and a log line) if one stayed busy."""
        deadline = time.monotonic() + wait
        left = list(self.directories)
        pause = _REMOVE_FIRST_PAUSE_S
        while left:
            directory = left[0]
            try:
                directory.rmdir()
            except FileNotFoundError:
                pass
            except OSError:  # EBUSY: its last process is still exiting
                if time.monotonic() >= deadline:
                    logger.warning("sandbox cgroup %s is still busy; left in place", directory)
                    return False
                time.sleep(pause)
                pause = min(pause * 2, _REMOVE_MAX_PAUSE_S)
                continue
            left.pop(0)
        return True


def _counter(path: Path, key: str) -> int:
    with contextlib.suppress(OSError, ValueError):
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    return 0


def cgroup_sweep(support: CgroupSupport) -> int:
    """Remove empty per-call cgroups a dead server left behind; how many went."""
    removed = 0
    for base in support.bases:
        with contextlib.suppress(OSError):
            for child in base.iterdir():
                if not child.name.startswith("call-") or not child.is_dir():
                    continue
                pid = child.name.split("-")[1]
                if not pid.isdigit() or Path(f"/proc/{pid}").exists():
                    continue  # a live server's (this one's too) or not ours
                with contextlib.suppress(OSError):
                    child.rmdir()
                    removed += 1
    return removed
