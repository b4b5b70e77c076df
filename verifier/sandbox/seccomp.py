"""seccomp-BPF filters of the sandbox roles, one profile each (x86_64).

Every sandbox process gets a filter before any code it does not own runs: the **runner** (imports the
candidate and calls ``forward``) installs :data:`RUNNER` itself, after its own start-up and before the
candidate's first instruction; the **reference worker** installs :data:`RUNNER` too (it runs only the
task's trusted problem file, but nothing there needs more); the **builder** (compilers only) gets
:data:`BUILDER` from the launcher before ``exec``, so the compilers and everything they start run
filtered. Filters are installed on every thread at once (``SECCOMP_FILTER_FLAG_TSYNC``): threads that
torch or numpy started earlier would otherwise run unfiltered.

Denied in every profile (the process is killed with SIGSYS, so the verdict names it):
  ptrace and cross-process memory (process_vm_*), pidfd_getfd/pidfd_open, kcmp, bpf, userfaultfd,
  keyctl/add_key/request_key, namespaces and mounts (unshare, setns, mount, umount2, pivot_root,
  chroot, the new mount API), kernel modules, kexec, clocks, reboot, swap, quotas, host names,
  fanotify, file handles (name_to_handle_at, open_by_handle_at).
Answered with an error instead (libraries probe these and fall back):
  io_uring_setup/enter/register -> ENOSYS (io_uring ops would bypass this filter: a socket, an
  xattr or an open are all io_uring operations); socket/socketpair -> EACCES (no network at all; the
  runner's network namespace has no address either); System V and POSIX IPC (msgget, shmget, semget,
  mq_open and their operations: objects that outlive the process) -> EACCES; perf_event_open -> EACCES; prctl's
  PR_TASK_PERF_EVENTS_DISABLE/ENABLE -> EPERM (they switch off every perf event attached to the caller, the
  monitor's CPU sampler included: verifier.monitor.cpu_sampler); file metadata
  (chmod, chown, utime(s), utimensat, *xattr*, file_setattr) -> EPERM, because Landlock does not
  govern metadata and a process that keeps uid 0 without capabilities still owns root's files.
Runner only (no process may come from candidate code, no more cores than the launcher gave it:
  sched_setaffinity -> EPERM): fork, vfork, clone without CLONE_THREAD,
  execve, execveat, setsid, setpgid, tkill, pidfd_send_signal, setting resource limits, and
  kill/tgkill of any other process are killed; clone3 answers ENOSYS so glibc falls back to clone, whose flags BPF can read. Threads
  (clone with CLONE_THREAD) stay: the OpenMP pool needs them. Setting a handler for SIGSEGV, SIGBUS or
  SIGCONT (rt_sigaction with an action) answers EPERM: a memory fault's handler is how work is moved out
  of the timed window into the untimed copy of the outputs (pages left PROT_NONE by ``forward`` and
  computed when the copy touches them); a SIGCONT handler runs when the monitor continues the runner for
  its turn, with the window's inputs already written and before the clock starts (the settle before a
  window, verifier.monitor.freeze.settle); nothing the runner needs sets one after its start-up.
Builder: compilers fork and exec (cc1plus, as, ld, ptxas) and raise their soft stack limit (never
  above the hard limits the launcher set); everything else above holds.

Elsewhere than x86_64 :func:`install` returns False and the caller reports it.
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
LD_W_ABS, JEQ_K, JSET_K, JGE_K, RET_K = 0x20, 0x15, 0x45, 0x35, 0x06
OFF_NR, OFF_ARCH = 0, 4

# x86_64 system call numbers, by what the profiles do with them
KILLED = dict(
    ptrace=101, process_vm_readv=310, process_vm_writev=311, pidfd_getfd=438, pidfd_open=434, kcmp=312,
    bpf=321, userfaultfd=323, keyctl=250, add_key=248, request_key=249, unshare=272, setns=308, mount=165,
    umount2=166, pivot_root=155, chroot=161, open_tree=428, move_mount=429, fsopen=430, fsconfig=431,
    fsmount=432, fspick=433, mount_setattr=442, init_module=175, finit_module=313, delete_module=176,
    kexec_load=246, kexec_file_load=320, settimeofday=164, clock_settime=227, clock_adjtime=305, adjtimex=159,
    reboot=169, swapon=167, swapoff=168, quotactl=179, quotactl_fd=443, sethostname=170, setdomainname=171,
    fanotify_init=300, name_to_handle_at=303, open_by_handle_at=304, acct=163, iopl=172,
    ioperm=173, lookup_dcookie=212, uselib=134, process_madvise=440, process_mrelease=448, mknod=133,
    mknodat=259,
)
NOSYS = dict(io_uring_setup=425, io_uring_enter=426, io_uring_register=427)
NETWORK = dict(socket=41, socketpair=53)
# System V and POSIX message queues, semaphores and shared memory: kernel objects outside every file
# rule (Landlock) and the sandbox's namespaces, which outlive the process and any other process could
# read (a candidate's queue or segment would carry its secrets past the verdict)
IPC = dict(shmget=29, shmat=30, shmctl=31, semget=64, semop=65, semctl=66, shmdt=67, msgget=68, msgsnd=69,
           msgrcv=70, msgctl=71, semtimedop=220, mq_open=240, mq_unlink=241, mq_timedsend=242,
           mq_timedreceive=243, mq_notify=244, mq_getsetattr=245)
PERF = dict(perf_event_open=298)
AFFINITY = dict(sched_setaffinity=203)  # the runner keeps the cores it was given (EPERM: libraries may try)
METADATA = dict(chmod=90, fchmod=91, chown=92, fchown=93, lchown=94, utime=132, setxattr=188, lsetxattr=189,
                fsetxattr=190, removexattr=197, lremovexattr=198, fremovexattr=199, utimes=235, fchownat=260,
                futimesat=261, fchmodat=268, utimensat=280, fchmodat2=452, setxattrat=463, removexattrat=466,
                file_setattr=469)
RUNNER_KILLED = dict(fork=57, vfork=58, execve=59, execveat=322, setsid=112, setpgid=109, tkill=200,
                     pidfd_send_signal=424, setrlimit=160)
CLONE, CLONE3, KILL, TGKILL, PRLIMIT64, PRCTL, RT_SIGACTION = 56, 435, 62, 234, 302, 157, 13
SIGBUS, SIGSEGV, SIGCONT = 7, 11, 18
PR_TASK_PERF_EVENTS_DISABLE, PR_TASK_PERF_EVENTS_ENABLE = 31, 32

RUNNER, BUILDER = "runner", "builder"
PROFILES = (RUNNER, BUILDER)


def supported() -> bool:
    return platform.system() == "Linux" and platform.machine() == "x86_64"


def _arg_lo(i: int) -> int:
    return 16 + 8 * i  # low 32 bits of args[i] (little endian)


def _arg_hi(i: int) -> int:
    return 20 + 8 * i


def program(profile: str, own_pid: int = 0) -> list[tuple[int, int, int, int]]:
    """The filter of ``profile`` as (code, jt, jf, k); ``own_pid`` is the runner's pid (the only
    process it may signal)."""
    if profile not in PROFILES:
        raise ValueError(f"unknown seccomp profile {profile!r}")
    prog: list = [("ld", OFF_ARCH), ("jne", AUDIT_ARCH_X86_64, "kill"), ("ld", OFF_NR),
                  ("jge", 0x40000000, "kill")]  # x32 ABI numbers alias the 64-bit ones
    killed = dict(KILLED, **(RUNNER_KILLED if profile == RUNNER else {}))
    prog += [("jeq", nr, "kill") for nr in killed.values()]
    prog += [("jeq", nr, "enosys") for nr in NOSYS.values()]
    prog += [("jeq", nr, "eacces") for nr in (*NETWORK.values(), *IPC.values(), *PERF.values())]
    prog += [("jeq", nr, "eperm") for nr in METADATA.values()]
    prog += [("jeq", PRCTL, "prctl")]
    if profile == RUNNER:
        prog += [("jeq", nr, "eperm") for nr in AFFINITY.values()]
    if profile == RUNNER:
        prog += [("jeq", PRLIMIT64, "prlimit"), ("jeq", CLONE3, "enosys"), ("jeq", CLONE, "clone"), ("jeq", KILL, "own_pid"),
                 ("jeq", TGKILL, "own_pid"), ("jeq", RT_SIGACTION, "sigaction")]
    prog += [("ret", RET_ALLOW)]
    prog += [("label", "clone"), ("ld", _arg_lo(0)), ("jset", CLONE_THREAD, "allow"), ("ret", RET_KILL_PROCESS)]
    prog += [("label", "own_pid"), ("ld", _arg_lo(0)), ("jne", own_pid, "kill"), ("ret", RET_ALLOW)]
    # prlimit64(pid, resource, new_limit, old_limit): reading is fine, setting is not
    prog += [("label", "prlimit"), ("ld", _arg_lo(2)), ("jne", 0, "kill"), ("ld", _arg_hi(2)),
             ("jne", 0, "kill"), ("ret", RET_ALLOW)]
    # rt_sigaction(sig, act, ...): no handler for a memory fault or a continue may be set (reading the current
    # one is fine)
    prog += [("label", "sigaction"), ("ld", _arg_lo(0)), ("jeq", SIGSEGV, "no_handler"), ("jeq", SIGBUS, "no_handler"),
             ("jeq", SIGCONT, "no_handler"), ("ret", RET_ALLOW), ("label", "no_handler"), ("ld", _arg_lo(1)), ("jne", 0, "eperm"), ("ld", _arg_hi(1)),
             ("jne", 0, "eperm"), ("ret", RET_ALLOW)]
    # prctl(option, ...): the perf-event switches are refused, every other option allowed (option is an int)
    prog += [("label", "prctl"), ("ld", _arg_lo(0)), ("jeq", PR_TASK_PERF_EVENTS_DISABLE, "eperm"),
             ("jeq", PR_TASK_PERF_EVENTS_ENABLE, "eperm"), ("ret", RET_ALLOW)]
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
            if offset > 255:
                raise ValueError("seccomp program: jump too far")
            code = {"jeq": JEQ_K, "jne": JEQ_K, "jset": JSET_K, "jge": JGE_K}[op]
            jt, jf = (0, offset) if op == "jne" else (offset, 0)
            out.append((code, jt, jf, ins[1]))
        index += 1
    return out


def install(profile: str) -> bool:
    """Install ``profile`` in the calling process, on every thread (irreversible). False if unsupported."""
    if not supported():
        return False
    filt = program(profile, os.getpid())
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
