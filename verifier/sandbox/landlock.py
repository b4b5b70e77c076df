"""Landlock (Linux >= 5.13) through raw system calls: the kernel's unprivileged filesystem,
TCP and scope sandbox, with no dependency beyond ctypes.

A :class:`Ruleset` handles every access right the running kernel's ABI knows, so anything not
granted by a rule is denied: ``allow(path, rights)`` grants rights beneath a directory (or on one
file), ``restrict()`` applies the ruleset to the calling thread and the processes it starts
afterwards (irreversibly; ``no_new_privs`` must be set first unless the caller has
CAP_SYS_ADMIN). Apply it while the process has one thread: threads that exist already keep
their old domain. ABI 4 adds TCP bind/connect (all denied here: no rule grants a port); ABI 6
adds scopes (no signals to, no abstract unix sockets of, processes outside the domain). A
Landlock domain also forbids ptrace (and so /proc/<pid>/environ, mem, maps...) of any process
outside it.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import stat
import struct
from functools import lru_cache

SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446  # same on every architecture
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1

# filesystem rights, by the ABI that introduced them
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1, 5: (1 << 16) - 1}
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # the only rights a file rule may hold

READ = READ_FILE | READ_DIR
READ_EXEC = READ | EXECUTE
WRITE = (WRITE_FILE | READ_FILE | READ_DIR | REMOVE_DIR | REMOVE_FILE | MAKE_DIR | MAKE_REG | REFER
         | TRUNCATE)  # a private working directory: no symlinks, devices, sockets or fifos
DEVICE = READ_FILE | WRITE_FILE | IOCTL_DEV  # a GPU/NPU character device
THREAD_NAMES = READ | WRITE_FILE | TRUNCATE  # the process's own /proc/<pid>/task: its threads' comm files


class LandlockError(OSError):
    """The kernel refused a Landlock call (errno and the call in the message)."""


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _syscall(number: int, *args) -> int:
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    result = libc.syscall(ctypes.c_long(number), *args)
    if result < 0:
        err = ctypes.get_errno()
        raise LandlockError(err, f"{os.strerror(err)}")
    return result


@lru_cache(maxsize=1)
def abi_version() -> tuple[int, str]:
    """(ABI version, "") where Landlock works, else (0, why not)."""
    if platform.system() != "Linux":
        return 0, f"Landlock is Linux-only (this is {platform.system()})"
    try:
        return _syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION)), ""
    except LandlockError as exc:
        why = {errno.ENOSYS: "the kernel has no Landlock system calls (Linux < 5.13, or blocked by a seccomp profile)",
               errno.EOPNOTSUPP: "Landlock is built in but disabled at boot (add landlock to the lsm= list)",
               errno.EPERM: "Landlock system calls are blocked (container seccomp profile?)"}
        return 0, why.get(exc.errno, f"landlock_create_ruleset failed: {exc.strerror}")


class Ruleset:
    """An open Landlock ruleset handling every right of the kernel's ABI (see the module doc)."""

    def __init__(self, abi: int) -> None:
        if abi < 1:
            raise LandlockError(errno.ENOSYS, "Landlock unavailable")
        self.abi = abi
        self.fs = FS_BY_ABI[min(abi, 5)]
        net = NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0
        scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0
        attr = struct.pack("<QQQ", self.fs, net, scoped)
        size = 24 if abi >= 6 else 16 if abi >= 4 else 8
        buf = ctypes.create_string_buffer(attr[:size], size)
        self.fd = _syscall(SYS_CREATE_RULESET, buf, ctypes.c_size_t(size), ctypes.c_uint32(0))

    def allow(self, path: str, rights: int) -> bool:
        """Grant ``rights`` (masked to this ABI) beneath ``path``; False if it does not exist."""
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            if not stat.S_ISDIR(os.fstat(fd).st_mode):
                rights &= FILE_RIGHTS
            rights &= self.fs
            if not rights:
                return True
            attr = struct.pack("<Qi", rights, fd)  # struct landlock_path_beneath_attr is packed
            buf = ctypes.create_string_buffer(attr, len(attr))
            _syscall(SYS_ADD_RULE, ctypes.c_int(self.fd), ctypes.c_int(RULE_PATH_BENEATH), buf, ctypes.c_uint32(0))
        finally:
            os.close(fd)
        return True

    def restrict(self) -> None:
        """Apply to the calling thread and its future children; closes the ruleset."""
        try:
            _syscall(SYS_RESTRICT_SELF, ctypes.c_int(self.fd), ctypes.c_uint32(0))
        finally:
            os.close(self.fd)
