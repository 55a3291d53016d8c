"""What one sandboxed process tree may use, and the sentence a person reads when it hit a limit.

Contract:

1. every sandboxed command runs under ``prlimit`` (util-linux, an ``exec`` prefix — never a
   ``preexec_fn``, which can deadlock a threaded server): ``--as`` (address space, three
   times the memory limit: runtimes such as Node reserve far more than they touch, and
   the cgroup bounds what is really used), ``--fsize`` (largest file: ``SIGXFSZ`` /
   ``EFBIG``), ``--cpu`` with the soft limit below the hard one (``SIGXCPU`` first,
   ``SIGKILL`` five seconds later) and ``--core=0``;
2. the whole tree's memory and number of processes are bounded by a cgroup when the host
   offers one (:mod:`openprogram.security.cgroups`); ``RLIMIT_NPROC`` is not used, since
   it counts every process of the host uid, the server's own threads included;
3. ``/tmp`` is a tmpfs of ``tmp_bytes`` (bubblewrap's ``--size``);
4. :func:`limit_sentence` turns what the call left behind (its exit code, the cgroup's
   OOM-kill and process-limit counters, a full ``/tmp``) into one plain sentence.
"""

from __future__ import annotations

import shutil
import signal
from dataclasses import dataclass

__all__ = ["SandboxLimits", "format_size", "limit_sentence", "prlimit_prefix"]

_MIB = 1 << 20
_GIB = 1 << 30
_CPU_GRACE_S = 5
"""Seconds between SIGXCPU (soft limit) and SIGKILL (hard limit)."""
_AS_FACTOR = 3
_CPU_REPORT = signal.strsignal(signal.SIGXCPU) or "CPU time limit exceeded"
_FSIZE_REPORT = signal.strsignal(signal.SIGXFSZ) or "File size limit exceeded"


@dataclass(frozen=True)
class SandboxLimits:
    """Per-call limits. Defaults: 1 GiB memory, 60 s CPU, 256 processes, 1 GiB files, /tmp 256 MiB."""

    memory_bytes: int = _GIB
    cpu_seconds: int = 60
    processes: int = 256
    file_bytes: int = _GIB
    tmp_bytes: int = 256 * _MIB
    address_space_factor: int = _AS_FACTOR
    """``--as`` is this many times ``memory_bytes`` (see the module doc)."""

    def __post_init__(self) -> None:
        for name in (
            "memory_bytes",
            "cpu_seconds",
            "processes",
            "file_bytes",
            "tmp_bytes",
            "address_space_factor",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(
                    f"sandbox limit {name!r} must be a positive integer, got {value!r}"
                )

    @property
    def address_space_bytes(self) -> int:
        return self.memory_bytes * self.address_space_factor


def prlimit_prefix(limits: SandboxLimits, *, prlimit: str = "prlimit") -> list[str]:
    """``prlimit ... --`` setting the per-process limits on what it ``exec``s."""
    return [
        shutil.which(prlimit) or prlimit,
        f"--as={limits.address_space_bytes}",
        f"--fsize={limits.file_bytes}",
        f"--cpu={limits.cpu_seconds}:{limits.cpu_seconds + _CPU_GRACE_S}",
        "--core=0",
        "--",
    ]


def format_size(size: int) -> str:
    """``1073741824`` → ``'1 GiB'``, ``268435456`` → ``'256 MiB'``."""
    for unit, factor in (("GiB", _GIB), ("MiB", _MIB), ("KiB", 1 << 10)):
        if size >= factor:
            amount = size / factor
            return f"{amount:.0f} {unit}" if amount == int(amount) else f"{amount:.1f} {unit}"
    return f"{size} bytes"


def limit_sentence(
    *,
    limits: SandboxLimits,
    exit_code: int,
    output: str = "",
    oom_kills: int = 0,
    process_limit_hits: int = 0,
    tmp_full: bool = False,
) -> str | None:
    """The plain sentence for the limit a finished command hit (None: it hit none).

    The memory sentence comes from the cgroup's OOM-kill counter (exit 137 alone may be
    a ``kill -9``); CPU and file size from the signal that ended the command (exit code
    128 + SIGXCPU, 128 + SIGXFSZ) or that the shell reported for one of its commands
    (``output`` holds "CPU time limit exceeded" / "File size limit exceeded").
    """
    sentences: list[str] = []
    if oom_kills:
        sentences.append(
            f"stopped: the command used more than {format_size(limits.memory_bytes)} of memory"
        )
    if exit_code == 128 + signal.SIGXCPU or _CPU_REPORT in output:
        sentences.append(f"stopped: the command used more than {limits.cpu_seconds} s of CPU")
    if exit_code == 128 + signal.SIGXFSZ or _FSIZE_REPORT in output:
        sentences.append(
            f"stopped: the command tried to write a file larger than "
            f"{format_size(limits.file_bytes)}"
        )
    if tmp_full:
        sentences.append(f"/tmp is full ({format_size(limits.tmp_bytes)})")
    if process_limit_hits:
        sentences.append(
            f"the command reached the limit of {limits.processes} processes (starting more failed)"
        )
    return "; ".join(sentences) or None
