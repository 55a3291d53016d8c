"""Parked launchers, already inside a fresh per-call cgroup: a call starts with no cgroup write.

Why: on cgroup v1 each write of a pid to ``cgroup.procs`` waits for a kernel RCU grace
period (~9-13 ms, even for a write that moves nothing), which the direct path
(:meth:`CallCgroup.join_prefix`) pays on every call. A process forked by one already in a
cgroup inherits it with no write at all, so the write is done ahead of time, off the call.

Contract, step by step:

1. :class:`LauncherPool` keeps up to ``size`` (``Config.sandbox_pool``) launchers parked per
   server process. A long-lived thread of the pool makes each one: a fresh
   :class:`CallCgroup` with the configured limits, then ``subprocess.Popen`` of
   ``python3 -I -S -c`` :data:`_LAUNCHER` (the server's own child, in a new session, stdin
   ``/dev/null``, stdout and stderr a new pipe, ``close_fds``; passed only the read end of
   a private argv pipe and the write end of the ``/tmp`` report pipe), then writes its pid
   to the cgroup's ``cgroup.procs`` and checks that it is listed there. The thread lives as
   long as the process: ``bwrap --die-with-parent`` follows the thread that forked it.
2. The launcher writes one byte to its stdout once started (the pool reads it before
   parking it: a call never waits for a Python start-up), then reads one JSON object
   ``{"argv", "cwd", "env"}`` from the argv pipe until EOF. On a whole one it restores
   ``SIGPIPE``/``SIGXFSZ`` (as ``subprocess`` does), ``chdir``\\ s and ``execvpe``\\ s exactly
   what the direct path would spawn; on EOF with nothing, or anything else, it exits 125
   and runs nothing.
3. Only the server holds the argv pipe's write end (``os.pipe`` is close-on-exec; no other
   child inherits it). When the server dies — ``kill -9`` included — it closes, and every
   parked launcher exits on EOF; their empty cgroups are removed at the next start
   (``cgroup_sweep``: they are named for the dead server's pid like any call's).
4. :meth:`LauncherPool.take` hands a launcher to exactly one call, which owns its cgroup
   from then on and removes it after (``Confined.close``): a cgroup never holds two calls.
   The next one is made :data:`_SETTLE_S` after that call is over (:meth:`Launcher.finished`):
   made during a call, its Python start-up and its ``cgroup.procs`` write (which holds up
   every ``fork`` on the host for a grace period) slowed the call. One parked for other
   limits, or dead, is never used. None parked (calls at once), no cgroup, no
   ``pidfd_open``, or ``sandbox_pool`` 0: ``None``, and the call takes the direct path.
5. :meth:`LauncherPool.close` (at interpreter exit) drains the pool: EOF to each launcher,
   then its cgroup is removed like a call's.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import logging
import os
import select
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

from openprogram.security.cgroups import CallCgroup, CgroupSupport, cgroup_support
from openprogram.security.sandbox_limits import SandboxLimits

__all__ = ["Launcher", "LauncherPool", "PooledProcess", "sandbox_pool"]

logger = logging.getLogger(__name__)

_LAUNCHER = """\
import json, os, signal, sys
fd = int(sys.argv[1])
os.write(1, b"r")  # started: the server reads this before it parks the launcher
data = b""
while chunk := os.read(fd, 65536):
    data += chunk
os.close(fd)
try:
    call = json.loads(data)
    argv, cwd, env = call["argv"], call["cwd"], call["env"]
    if not (isinstance(argv, list) and argv and all(type(a) is str for a in argv)
            and type(cwd) is str and type(env) is dict
            and all(type(k) is str and type(v) is str for k, v in env.items())):
        raise ValueError(call)
except Exception:
    os._exit(125)
for number in (signal.SIGPIPE, signal.SIGXFSZ):
    signal.signal(number, signal.SIG_DFL)
try:
    os.chdir(cwd)
    os.execvpe(argv[0], argv, env)
except (OSError, ValueError) as exc:  # ValueError: a NUL or unencodable character
    os.write(2, f"openprogram: could not start {argv[0]!r}: {exc}\\n".encode())
os._exit(127)
"""
"""Reads one JSON call from the argv pipe (its fd number is ``argv[1]``) and execs it."""

_RETRY_S = 5.0
"""After a launcher could not be made (cgroup full, fork failed), wait before trying again."""
_EXIT_WAIT_S = 5.0
_START_WAIT_S = 30.0
_SETTLE_S = 0.25
"""A new launcher is made this long after the last pooled call ended, not during its tool's
tail (the workspace quota's walk, the result): the next call comes seconds later anyway
(the model's answer, the person's approval)."""


@dataclass
class Launcher:
    """One parked launcher: its process, cgroup, and the server's ends of its pipes."""

    process: subprocess.Popen
    cgroup: CallCgroup
    limits: SandboxLimits
    output_read: int | None
    """Read end of the pipe that is the launcher's (then the call's) stdout and stderr."""
    report_read: int | None
    report_fd: int
    """The report pipe's write end, by its number in the launcher (``>&N`` in the script)."""
    _argv_write: int | None = field(default=None, repr=False)
    owner: LauncherPool | None = field(default=None, repr=False)
    """The pool that handed it to a call, told when the call is over."""

    @classmethod
    def spawn(cls, support: CgroupSupport, limits: SandboxLimits) -> Launcher:
        """Make the call's cgroup, start a launcher, move it in (blocking: off the hot path)."""
        cgroup = CallCgroup.create(support, limits)
        fds: list[int] = []
        try:
            argv_read, argv_write = os.pipe()
            output_read, output_write = os.pipe()
            report_read, report_write = os.pipe()
            fds = [argv_read, argv_write, output_read, output_write, report_read, report_write]
            process = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _LAUNCHER, str(argv_read)],
                cwd="/",
                env={},
                stdin=subprocess.DEVNULL,
                stdout=output_write,
                stderr=output_write,
                start_new_session=True,
                close_fds=True,
                pass_fds=(argv_read, report_write),
            )
        except BaseException:
            for fd in fds:
                os.close(fd)
            cgroup.remove()
            raise
        for fd in (argv_read, output_write, report_write):
            os.close(fd)
        launcher = cls(
            process=process,
            cgroup=cgroup,
            limits=limits,
            output_read=output_read,
            report_read=report_read,
            report_fd=report_write,
            _argv_write=argv_write,
        )
        try:
            cgroup.move(process.pid)
            if not cgroup.holds(process.pid):
                raise OSError(f"launcher {process.pid} is not in {cgroup.directories}")
            # Parked only once blocked on its read: a call must not wait for its start-up.
            ready, _, _ = select.select([output_read], [], [], _START_WAIT_S)
            if not ready or os.read(output_read, 1) != b"r":
                raise OSError(f"launcher {process.pid} did not start")
        except BaseException:
            launcher.discard()
            raise
        return launcher

    @property
    def started(self) -> bool:
        return self._argv_write is None

    def hand_over(self, name: str) -> int:
        """The server's end of ``"output"`` or ``"report"``, now the caller's to close."""
        attribute = f"{name}_read"
        fd = getattr(self, attribute)
        if fd is None:
            raise RuntimeError(f"this launcher's {name} pipe was already handed over")
        setattr(self, attribute, None)
        return fd

    def start(self, argv: list[str], *, cwd: str, env: dict[str, str]) -> PooledProcess:
        """Run ``argv`` in ``cwd`` with exactly ``env``: the call starts now, in its cgroup."""
        if self._argv_write is None:
            raise RuntimeError("this launcher was already used")
        data = json.dumps({"argv": argv, "cwd": cwd, "env": env}).encode()
        fd, self._argv_write = self._argv_write, None
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        except BrokenPipeError as exc:
            raise RuntimeError("the sandbox launcher died before the call started") from exc
        finally:
            os.close(fd)
        return PooledProcess(self.process)

    def finished(self) -> None:
        """The call that took it is over (its cgroup removed): the pool may park the next."""
        pool, self.owner = self.owner, None
        if pool is not None:
            pool.release()

    def discard(self) -> None:
        """Unused: EOF makes the launcher exit running nothing; wait, close, remove its cgroup."""
        if self._argv_write is not None:
            os.close(self._argv_write)
            self._argv_write = None
        try:
            self.process.wait(_EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for fd in (self.output_read, self.report_read):
            if fd is not None:
                os.close(fd)
        self.output_read = self.report_read = None
        self.cgroup.remove()


class PooledProcess:
    """What ``bash`` needs of a process (``pid``, ``returncode``, ``await wait()``), for a
    launcher's ``Popen``: its exit is awaited through a pidfd, without a thread."""

    def __init__(self, process: subprocess.Popen) -> None:
        self._process = process
        self.pid = process.pid

    @property
    def returncode(self) -> int | None:
        return self._process.poll()

    async def wait(self) -> int:
        code = self._process.poll()
        if code is not None:
            return code
        loop = asyncio.get_running_loop()
        pidfd = os.pidfd_open(self.pid)  # the child is not reaped until poll() says so
        try:
            while (code := self._process.poll()) is None:
                exited = loop.create_future()
                loop.add_reader(pidfd, _resolve, exited)
                try:
                    await exited
                finally:
                    loop.remove_reader(pidfd)
        finally:
            os.close(pidfd)
        return code


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class LauncherPool:
    """Up to ``size`` parked launchers for calls with the limits last asked for."""

    def __init__(self, *, size: int, support: CgroupSupport) -> None:
        self.size = size
        self.support = support
        self.taken = 0
        """How many calls started from a parked launcher (tests and the bench read it)."""
        self._cond = threading.Condition()
        self._parked: list[Launcher] = []
        self._retired: list[Launcher] = []
        self._limits: SandboxLimits | None = None
        self._running = 0
        self._released_at = 0.0
        """Launchers taken whose call has not finished (:meth:`Launcher.finished`)."""
        self._thread: threading.Thread | None = None
        self._closed = False

    @property
    def enabled(self) -> bool:
        return self.size > 0 and self.support.version is not None and hasattr(os, "pidfd_open")

    def take(self, limits: SandboxLimits) -> Launcher | None:
        """A parked launcher for ``limits`` (now the caller's, cgroup included), or None."""
        if not self.enabled:
            return None
        with self._cond:
            if self._closed:
                return None
            self._want(limits)
            launcher = self._parked.pop(0) if self._parked else None
            if launcher is None:
                return None
            self.taken += 1
            self._running += 1
            launcher.owner = self
        if launcher.process.poll() is not None:  # it died while parked: never used
            launcher.owner = None
            with self._cond:
                self._retired.append(launcher)
                self.taken -= 1
                self._running -= 1
                self._cond.notify_all()
            return None
        return launcher

    def release(self) -> None:
        """A taken launcher's call is over (:meth:`Launcher.finished`)."""
        with self._cond:
            self._running -= 1
            self._released_at = time.monotonic()
            self._cond.notify_all()  # refill, now that no pooled call runs

    def wait_ready(self, limits: SandboxLimits, timeout: float) -> bool:
        """Block until a launcher for ``limits`` is parked (tests, the bench); False on timeout."""
        if not self.enabled:
            return False
        with self._cond:
            self._want(limits)
            self._cond.notify_all()
            return self._cond.wait_for(lambda: bool(self._parked), timeout)

    def resize(self, size: int) -> None:
        """Keep up to ``size`` parked from now on; the ones past it retire."""
        with self._cond:
            self.size = max(size, 0)
            self._retired += self._parked[self.size :]
            del self._parked[self.size :]
            self._cond.notify_all()

    def parked(self) -> list[Launcher]:
        with self._cond:
            return list(self._parked)

    def _want(self, limits: SandboxLimits) -> None:
        """(Under the lock.) Park for ``limits`` from now on; launchers for others retire."""
        if self._limits != limits:
            self._limits = limits
            self._retired += self._parked
            self._parked = []
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="openprogram-sandbox-pool", daemon=True
            )
            self._thread.start()

    def _run(self) -> None:
        """The pool's thread: retire, refill, sleep; lives until :meth:`close`."""
        while True:
            with self._cond:
                # Refills wait until no pooled call runs: making one (a Python start-up,
                # then a cgroup.procs write that holds up every fork on the host for a
                # grace period) would otherwise compete with the call.
                self._cond.wait_for(
                    lambda: (
                        self._closed
                        or self._retired
                        or (not self._running and len(self._parked) < self.size)
                    )
                )
                retired, self._retired = self._retired, []
                limits = None if self._closed else self._limits
            for launcher in retired:
                launcher.discard()
            if limits is None:
                return
            if retired:
                continue
            with self._cond:  # let the rest of the call's tool run (its quota walk) first
                settle = self._released_at + _SETTLE_S - time.monotonic()
                if settle > 0:
                    self._cond.wait(settle)
                    continue
            try:
                launcher = Launcher.spawn(self.support, limits)
            except (OSError, subprocess.SubprocessError) as exc:
                logger.warning("sandbox pool: could not park a launcher (%s); direct path", exc)
                with self._cond:
                    self._cond.wait(_RETRY_S)
                continue
            with self._cond:
                if self._closed or limits != self._limits:
                    self._retired.append(launcher)
                else:
                    self._parked.append(launcher)
                self._cond.notify_all()

    def close(self) -> None:
        """Drain: every parked launcher gets EOF and exits; their cgroups are removed."""
        with self._cond:
            self._closed = True
            self._retired += self._parked
            self._parked = []
            thread = self._thread
            self._cond.notify_all()
        if thread is not None:
            thread.join(_EXIT_WAIT_S * 2)
        with self._cond:
            retired, self._retired = self._retired, []
        for launcher in retired:
            launcher.discard()


_pool: LauncherPool | None = None
_pool_lock = threading.Lock()


def sandbox_pool() -> LauncherPool:
    """This process's pool (made on first use, drained at exit), sized by ``Config.sandbox_pool``."""
    from openprogram.config import get_config

    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = LauncherPool(size=0, support=cgroup_support())
            atexit.register(_pool.close)
    _pool.resize(get_config().sandbox_pool)
    return _pool
