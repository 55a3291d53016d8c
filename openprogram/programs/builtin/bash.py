"""The ``bash`` tool: one shell command in the workspace, approved, scrubbed, killable.

Safety, in the order it applies:

* layer 4 hides the tool when the host does not allow a shell (``Config.allow_shell``;
  the web app turns it off when it binds beyond loopback unless explicitly allowed),
  with a reason saying how to turn it on (:func:`shell_disabled_reason`);
* layer 4 also hides it when the bubblewrap sandbox cannot start here
  (:func:`openprogram.security.sandbox.sandbox_problem`), and from non-staff users
  when ``Config.shell_staff_only`` is set — it never runs unconfined;
* every call needs the person's approval (``requires_approval=True``: no approver, no run);
* the command runs inside the sandbox (``openprogram/security/sandbox.py``): the
  turn's workspace is the only user data it can see and the only place it can write,
  ``/tmp`` is private, there is no network unless the deployment opts in, and killing
  the server (even ``kill -9``) kills everything in the sandbox;
* it is never root on the host: a root server switches the process to the unprivileged
  sandbox user before bubblewrap starts (``openprogram/security/sandbox_user.py``);
* each call is bounded (``openprogram/security/confinement.py``): memory and processes
  of its whole tree (a cgroup per call, where the host has one), CPU time, file size
  and address space per process (``prlimit``), and the size of ``/tmp``; a limit hit
  adds one plain sentence to the result ("stopped: the command used more than 1 GiB of
  memory");
* the command runs with the workspace as working directory and ``HOME``, and an
  environment built from an allow-list (never the server's own variables, never a
  name that looks like a key, token, secret or password);
* it runs in its own session and its own PID namespace: on timeout, cancel, or when
  the command ends, the process group is stopped (SIGTERM, then SIGKILL), and when
  ``bwrap`` goes the kernel kills the namespace's init and with it every process the
  command started — ``setsid`` and double forks included. Nothing survives the call.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import re
import shutil
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

from openprogram.config import get_config
from openprogram.programs._availability import ToolUnavailable
from openprogram.programs.decorator import function
from openprogram.programs.results import ToolReturn
from openprogram.security.confinement import Confined, confine
from openprogram.security.sandbox import sandbox_problem
from openprogram.security.workspace_quota import shell_usage_note
from openprogram.workspace import current_workspace

__all__ = ["bash", "scrubbed_environment", "shell_allowed", "shell_disabled_reason"]

_ENV_ALLOW_LIST = ("PATH", "LANG", "LC_ALL", "TERM", "TZ")
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
_TERM_GRACE_S = 0.3
"""SIGTERM → SIGKILL delay; short, because the runtime returns 0.5 s after a cancel."""
_DRAIN_S = 2.0
_HEAD_CHARS = 100_000
_TAIL_CHARS = 100_000


def shell_allowed() -> bool:
    """The host's shell policy (Config.allow_shell)."""
    return get_config().allow_shell


def shell_disabled_reason() -> str:
    """Why the shell is off, and how to turn it on.

    The web app sets ``allow_shell`` from ``OPENPROGRAM_ALLOW_SHELL``, which defaults
    to off when the server binds beyond loopback: when the variable is set, the
    operator chose; when it is not, the bind address did.
    """
    how = "set OPENPROGRAM_ALLOW_SHELL=1 to allow it (every call still needs approval)"
    chosen = os.environ.get("OPENPROGRAM_ALLOW_SHELL")
    if chosen is not None:
        return f"shell is disabled: OPENPROGRAM_ALLOW_SHELL is {chosen!r}; {how}"
    return f"shell is disabled: the server binds beyond loopback; {how}"


def _shell_gate() -> bool:
    """Layer 4 gate: off with an actionable reason unless the host allows a shell."""
    if not shell_allowed():
        raise ToolUnavailable(shell_disabled_reason())
    problem = sandbox_problem(get_config().bwrap)
    if problem is not None:
        raise ToolUnavailable(problem)
    return True


def _staff_gate(**context: Any) -> bool:
    """Layer 4 per user: with ``shell_staff_only``, only staff see ``bash``."""
    if get_config().shell_staff_only and not context.get("is_staff"):
        raise ToolUnavailable("the shell is limited to staff on this server")
    return True


def scrubbed_environment(workspace: str) -> dict[str, str]:
    """The child's whole environment: allow-listed variables only, HOME = workspace."""
    env = {
        name: os.environ[name]
        for name in _ENV_ALLOW_LIST
        if name in os.environ and not _SECRET_NAME.search(name)
    }
    env.setdefault("PATH", os.defpath)
    env.setdefault("LANG", "C.UTF-8")
    env.setdefault("TERM", "dumb")
    env["HOME"] = workspace
    return env


class _CappedOutput:
    """Keeps the first and last 100,000 characters of the command's output."""

    def __init__(self) -> None:
        self.head: list[str] = []
        self.head_size = 0
        self.tail = ""
        self.dropped = 0

    def add(self, text: str) -> None:
        if self.head_size < _HEAD_CHARS:
            room = _HEAD_CHARS - self.head_size
            self.head.append(text[:room])
            self.head_size += len(text[:room])
            text = text[room:]
        if text:
            combined = self.tail + text
            self.dropped += max(0, len(combined) - _TAIL_CHARS)
            self.tail = combined[-_TAIL_CHARS:]

    def text(self) -> str:
        marker = f"\n[… {self.dropped:,} characters of output omitted …]\n" if self.dropped else ""
        return "".join(self.head) + marker + self.tail


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _stop_group(process: asyncio.subprocess.Process) -> None:
    """SIGTERM the whole group, give it a moment, then SIGKILL whatever is left."""
    _signal_group(process.pid, signal.SIGTERM)
    if process.returncode is None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), _TERM_GRACE_S)
    _signal_group(process.pid, signal.SIGKILL)


async def _open_reader(fd: int) -> tuple[asyncio.StreamReader, asyncio.BaseTransport]:
    loop = asyncio.get_running_loop()
    stream = asyncio.StreamReader()
    pipe = os.fdopen(fd, "rb", buffering=0)
    try:
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(stream), pipe
        )
    except BaseException:
        pipe.close()
        raise
    return stream, transport


async def _pump(
    stream: asyncio.StreamReader, output: _CappedOutput, on_update: Callable[[str], Any] | None
) -> None:
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    while chunk := await stream.read(65536):
        text = decoder.decode(chunk)
        if text:
            output.add(text)
            if on_update is not None:
                on_update(text)
    if tail := decoder.decode(b"", final=True):
        output.add(tail)
        if on_update is not None:
            on_update(tail)


@function(
    toolset=["runtime"],
    unsafe_in=["plan"],
    requires_approval=True,
    check_fn=_shell_gate,
    can_use=_staff_gate,
    timeout=120,
    timeout_min=1,
    timeout_max=600,
    max_result_chars=30_000,
    label="Run shell command",
)
async def bash(
    command: str,
    timeout: float = 120,
    on_update: Callable[[str], Any] | None = None,
) -> ToolReturn:
    """Run a shell command with bash in the workspace and return its output and exit code.

    Each call needs the person's approval and starts a fresh shell: the working directory
    is the workspace root (also HOME), and no state such as `cd` or exported variables
    carries over to the next call. The environment holds only PATH, LANG, LC_ALL, TERM
    and TZ — no API keys or server secrets. Standard output and error are merged and
    streamed live; very long output keeps its first and last 100,000 characters. The
    command is stopped, with everything it started, after `timeout` seconds (default
    120, at most 600), and background jobs (`&`) do not outlive the call. It runs in a
    sandbox: only the workspace is visible and writable, /tmp is private and empty,
    and there is normally no network access. Memory, CPU time, processes, file size and
    /tmp are limited; a command that hits a limit is stopped and the result says which.
    Prefer the
    read, grep, glob and edit tools for looking at and changing files.

    Args:
        command: The command line to run, e.g. "pytest -q tests/test_api.py".
        timeout: Seconds before the command is stopped.
    """
    if not command.strip():
        raise ValueError("command is empty; give the shell command to run")
    if not shell_allowed():
        raise PermissionError(shell_disabled_reason())
    config = get_config()
    problem = sandbox_problem(config.bwrap)
    if problem is not None:  # checked again at call time: never run unconfined
        raise PermissionError(problem)
    workspace = str(current_workspace())
    confined = await asyncio.to_thread(
        confine,
        [shutil.which("bash") or "/bin/sh", "-c", command],
        workspace=Path(workspace),
        limits=config.sandbox_limits,
        network=config.sandbox_network,
        bwrap=config.bwrap,
        report_tmp=True,
        pooled=True,
    )
    try:
        exit_code, text = await _run_confined(confined, workspace, on_update)
        stopped = confined.outcome(exit_code, text)
    finally:
        await asyncio.to_thread(confined.close)
    if stopped is not None:
        text += f"\n{stopped}"
    text += f"\n[exit code {exit_code}]"
    text += await asyncio.to_thread(shell_usage_note, Path(workspace))  # the workspace quota
    data: dict[str, Any] = {"exit_code": exit_code}
    if stopped is not None:
        data["stopped"] = stopped
    return ToolReturn(text, data=data)


async def _run_confined(
    confined: Confined, workspace: str, on_update: Callable[[str], Any] | None
) -> tuple[int, str]:
    """Spawn ``confined``, stream its output, stop what it leaves: (exit code, output)."""
    if confined.launcher is not None:
        # Parked by the pool's long-lived thread, already in the call's fresh cgroup, with
        # the same stdin, output pipe and session as below; it starts when given the argv.
        read_fd = confined.launcher.hand_over("output")
        try:
            process: Any = confined.launcher.start(
                confined.argv, cwd=workspace, env=scrubbed_environment(workspace)
            )
        except BaseException:
            os.close(read_fd)
            raise
        return await _stream(process, read_fd, on_update)
    # Our own pipe, not asyncio's: Process.wait() would otherwise also wait for every
    # holder of the pipe (a background job) to exit, and the job would outlive us.
    read_fd, write_fd = os.pipe()
    try:
        # Spawned from the event loop's (long-lived) thread: bwrap's die-with-parent
        # signal fires when the thread that forked it ends, i.e. with the server.
        process = await asyncio.create_subprocess_exec(
            *confined.argv,
            cwd=workspace,
            env=scrubbed_environment(workspace),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=write_fd,
            stderr=write_fd,
            start_new_session=True,
            pass_fds=confined.pass_fds,
        )
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
        confined.spawned()
    return await _stream(process, read_fd, on_update)


async def _stream(
    process: Any, read_fd: int, on_update: Callable[[str], Any] | None
) -> tuple[int, str]:
    """Pump the output from ``read_fd`` until ``process`` ends; stop what it leaves behind."""
    output = _CappedOutput()
    reader: asyncio.Future[None] | None = None
    transport: asyncio.BaseTransport | None = None
    held_open = False
    try:
        stream, transport = await _open_reader(read_fd)
        reader = asyncio.ensure_future(_pump(stream, output, on_update))
        exit_code = await process.wait()
        # The command is done; stop anything it left running so the pipe closes.
        _signal_group(process.pid, signal.SIGKILL)
        try:
            await asyncio.wait_for(asyncio.shield(reader), _DRAIN_S)
        except TimeoutError:
            held_open = True  # a process that left our group still holds the pipe
    finally:
        if process.returncode is None:
            # Timeout or cancel: the runtime cancelled this coroutine.
            await _stop_group(process)
        else:
            _signal_group(process.pid, signal.SIGKILL)
        if reader is not None:
            reader.cancel()
        if transport is not None:
            transport.close()
    text = output.text() or "(no output)"
    if held_open:
        text += "\n[output cut: a detached process kept the output open]"
    return exit_code, text
