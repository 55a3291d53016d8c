"""``openat2(2)`` for :mod:`openprogram.security.workspace_fs`, through ``ctypes``.

Python's ``os`` has no binding for it. Every lookup gets ``RESOLVE_BENEATH |
RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS``; ``EAGAIN`` (a rename elsewhere in the
file system raced the lookup) is retried.
"""

from __future__ import annotations

import ctypes
import errno
import os

__all__ = ["openat2"]

_SYS_OPENAT2 = 437  # the same number on every Linux architecture (unified syscall table)
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
_RESOLVE = _RESOLVE_BENEATH | _RESOLVE_NO_MAGICLINKS | _RESOLVE_NO_SYMLINKS
_EAGAIN_RETRIES = 64


class _OpenHow(ctypes.Structure):
    _fields_ = [
        ("flags", ctypes.c_uint64),
        ("mode", ctypes.c_uint64),
        ("resolve", ctypes.c_uint64),
    ]


_syscall = ctypes.CDLL(None, use_errno=True).syscall
_syscall.restype = ctypes.c_long
_syscall.argtypes = [
    ctypes.c_long,
    ctypes.c_int,
    ctypes.c_char_p,
    ctypes.c_void_p,
    ctypes.c_size_t,
]


def openat2(dir_fd: int, relative: str, flags: int, mode: int) -> int:
    """A new descriptor of ``relative`` beneath ``dir_fd``, or :class:`OSError`."""
    # openat2 is strict where openat is lenient: a mode without O_CREAT is EINVAL.
    how = _OpenHow(flags, mode if flags & os.O_CREAT else 0, _RESOLVE)
    path = os.fsencode(relative)
    for _ in range(_EAGAIN_RETRIES):
        fd = _syscall(_SYS_OPENAT2, dir_fd, path, ctypes.byref(how), ctypes.sizeof(how))
        if fd >= 0:
            return fd
        code = ctypes.get_errno()
        if code != errno.EAGAIN:
            raise OSError(code, os.strerror(code), relative)
    raise OSError(errno.EAGAIN, "the path kept changing while it was opened", relative)
