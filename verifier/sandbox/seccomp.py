"""A seccomp-BPF filter installed in the sandbox child after compilation, before candidate code runs.

Root ignores RLIMIT_NPROC, so process limits alone cannot bound a fork bomb or stop a candidate
from signalling the caller. The filter kills the child (SIGSYS) on: process creation (fork, vfork,
clone without CLONE_THREAD), exec, signals to any other process (kill/tgkill with a foreign pid,
tkill, pidfd_send_signal), ptrace and cross-process memory access, and raising resource limits.
``socket`` fails with EACCES (no network). Changing the metadata of files (chmod, chown, utime,
extended attributes) fails with EPERM: Landlock does not govern those, and uid 0 without
capabilities still owns root's files (it could chmod the lake to 000). Threads (clone with CLONE_THREAD) stay allowed: the
OpenMP pool needs them. clone3 answers ENOSYS so glibc falls back to clone, which BPF can inspect.

The filter is installed on every thread of the process at once (``SECCOMP_FILTER_FLAG_TSYNC``):
threads started before it (numpy's OpenBLAS pool, torch's) would otherwise run unfiltered, and
native code can get work onto them.

x86_64 only; elsewhere :func:`install` returns False and the caller reports it.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct

AUDIT_ARCH_X86_64 = 0xC000003E
PR_SET_NO_NEW_PRIVS = 38
SYS_SECCOMP, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC = 317, 1, 1
RET_KILL_PROCESS, RET_ALLOW, RET_ERRNO = 0x80000000, 0x7FFF0000, 0x00050000
CLONE_THREAD = 0x00010000
# BPF opcodes
LD_W_ABS, JEQ_K, JSET_K, JGE_K, RET_K = 0x20, 0x15, 0x45, 0x35, 0x06

# x86_64 syscall numbers
NR = dict(setpgid=109, setsid=112, socket=41, clone=56, fork=57, vfork=58, execve=59, kill=62, ptrace=101, setrlimit=160,
          tkill=200, tgkill=234, prlimit64=302, process_vm_readv=310, process_vm_writev=311,
          execveat=322, pidfd_send_signal=424, clone3=435)
METADATA = dict(chmod=90, fchmod=91, chown=92, fchown=93, lchown=94, utime=132, setxattr=188, lsetxattr=189,
                fsetxattr=190, removexattr=197, lremovexattr=198, fremovexattr=199, utimes=235, fchownat=260,
                futimesat=261, fchmodat=268, utimensat=280, fchmodat2=452)
ALWAYS_KILL = ("fork", "vfork", "execve", "execveat", "ptrace", "setrlimit", "tkill", "setsid", "setpgid",
               "process_vm_readv", "process_vm_writev", "pidfd_send_signal")
OFF_NR, OFF_ARCH = 0, 4


def _arg_lo(i: int) -> int:
    return 16 + 8 * i  # low 32 bits of args[i] (little endian)


def _arg_hi(i: int) -> int:
    return 20 + 8 * i


def supported() -> bool:
    return platform.system() == "Linux" and platform.machine() == "x86_64"


def _program(own_pid: int) -> list[tuple[int, int, int, int]]:
    """The filter as (code, jt, jf, k) tuples; jumps are resolved to labels below."""
    prog: list = [("ld", OFF_ARCH), ("jne", AUDIT_ARCH_X86_64, "kill"), ("ld", OFF_NR),
                  ("jge", 0x40000000, "kill")]  # x32 ABI numbers alias the 64-bit ones
    prog += [("jeq", NR[name], "kill") for name in ALWAYS_KILL]
    prog += [("jeq", number, "eperm") for number in METADATA.values()]
    prog += [("jeq", NR["clone3"], "enosys"), ("jeq", NR["socket"], "eacces"),
             ("jeq", NR["clone"], "clone"), ("jeq", NR["kill"], "own_pid"),
             ("jeq", NR["tgkill"], "own_pid"), ("jeq", NR["prlimit64"], "prlimit"), ("ret", RET_ALLOW)]
    prog += [("label", "clone"), ("ld", _arg_lo(0)), ("jset", CLONE_THREAD, "allow"), ("ret", RET_KILL_PROCESS)]
    prog += [("label", "own_pid"), ("ld", _arg_lo(0)), ("jne", own_pid, "kill"), ("ret", RET_ALLOW)]
    # prlimit64(pid, resource, new_limit, old_limit): reading is fine, setting is not
    prog += [("label", "prlimit"), ("ld", _arg_lo(2)), ("jne", 0, "kill"), ("ld", _arg_hi(2)),
             ("jne", 0, "kill"), ("ret", RET_ALLOW)]
    prog += [("label", "allow"), ("ret", RET_ALLOW), ("label", "kill"), ("ret", RET_KILL_PROCESS),
             ("label", "enosys"), ("ret", RET_ERRNO | errno.ENOSYS),
             ("label", "eacces"), ("ret", RET_ERRNO | errno.EACCES),
             ("label", "eperm"), ("ret", RET_ERRNO | errno.EPERM)]
    return _assemble(prog)


def _assemble(prog: list) -> list[tuple[int, int, int, int]]:
    labels, index = {}, 0
    for ins in prog:
        if ins[0] == "label":
            labels[ins[1]] = index
        else:
            index += 1
    out, index = [], 0
    for ins in prog:
        op = ins[0]
        if op == "label":
            continue
        if op == "ld":
            out.append((LD_W_ABS, 0, 0, ins[1]))
        elif op == "ret":
            out.append((RET_K, 0, 0, ins[1]))
        else:
            offset = labels[ins[2]] - index - 1
            code = {"jeq": JEQ_K, "jne": JEQ_K, "jset": JSET_K, "jge": JGE_K}[op]
            jt, jf = (0, offset) if op == "jne" else (offset, 0)
            out.append((code, jt, jf, ins[1]))
        index += 1
    return out


def install() -> bool:
    """Install the filter in the calling process (irreversible). Returns False if unsupported."""
    if not supported():
        return False
    filt = _program(os.getpid())
    raw = b"".join(struct.pack("<HBBI", code, jt, jf, k & 0xFFFFFFFF) for code, jt, jf, k in filt)
    buf = ctypes.create_string_buffer(raw, len(raw))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(len(filt), ctypes.cast(buf, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, None, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    libc.syscall.restype = ctypes.c_long
    result = libc.syscall(ctypes.c_long(SYS_SECCOMP), ctypes.c_uint(SECCOMP_SET_MODE_FILTER),
                          ctypes.c_uint(SECCOMP_FILTER_FLAG_TSYNC), ctypes.byref(fprog))
    if result != 0:  # > 0: the id of a thread that could not take the filter
        raise OSError(ctypes.get_errno() if result < 0 else 0, f"seccomp(SET_MODE_FILTER, TSYNC) failed ({result})")
    return True
