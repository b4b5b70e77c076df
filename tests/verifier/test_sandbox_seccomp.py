"""The seccomp profiles of the sandbox roles, system call by system call, in real processes: what kills
the process (SIGSYS), what answers an error, and what stays allowed (threads for the OpenMP pool; fork
and exec for the builder's compilers)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from verifier.sandbox import seccomp

pytestmark = pytest.mark.skipif(not seccomp.supported(), reason="the seccomp filter is x86_64 Linux only")
SIGSYS = -31
PRELUDE = """
import ctypes, errno, os, socket, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
from verifier.sandbox import seccomp
assert seccomp.install(sys.argv[1])
def raw(nr, *args):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    print("errno", ctypes.get_errno() if r < 0 else 0, flush=True)
"""
CASES = {
    "thread": "t = threading.Thread(target=print); t.start(); t.join(); print('errno', 0)",
    "fork": "pid = os.fork()\nif pid == 0: os._exit(0)\nos.waitpid(pid, 0); print('errno', 0)",
    "exec": "os.execv('/bin/true', ['true'])",
    "kill_parent": "os.kill(os.getppid(), 0)",
    "setsid": "os.setsid()",
    "ptrace": "raw(101, 16, os.getppid(), 0, 0)",
    "unshare": "raw(272, 0x40000000)",
    "bpf": "raw(321, 0, 0, 0)",
    "io_uring": "raw(425, 8, 0)",
    "socket_udp": "raw(41, 2, 2, 0)",
    "socketpair": "raw(53, 1, 1, 0, 0)",
    "sysv_msgget": "raw(68, 0x7e57c0de, 0o1666)",
    "sysv_shmget": "raw(29, 0x7e57c0df, 4096, 0o1666)",
    "posix_mq_open": "raw(240, id(b'/evokernel-mq'), 0o100 | 2, 0o666, 0)",
    "chmod": "raw(90, id(b'/tmp'), 0)",
    "setxattr": "raw(188, 0, 0, 0, 0, 0)",
    "affinity": "raw(203, 0, 0, 0)",
    "pidfd_getfd": "raw(438, 0, 0, 0)",
    "open_by_handle_at": "raw(304, 0, 0, 0)",
    "perf_event_open": "raw(298, 0, 0, -1, -1, 0)",
    "prctl_perf_disable": "raw(157, 31, 0, 0, 0, 0)",
    "prctl_perf_enable": "raw(157, 32, 0, 0, 0, 0)",
    "prctl_name": "raw(157, 15, id(b'renamed'), 0, 0, 0)",
    # rt_sigaction(sig, act, oldact, sigsetsize): an action for a memory fault or a continue is refused, reading
    # is not (a SIGCONT handler would run with the window's inputs in place, before the clock starts)
    "sigaction_segv_set": "act = ctypes.create_string_buffer(152); raw(13, 11, ctypes.addressof(act), 0, 8)",
    "sigaction_bus_set": "act = ctypes.create_string_buffer(152); raw(13, 7, ctypes.addressof(act), 0, 8)",
    "sigaction_segv_read": "old = ctypes.create_string_buffer(152); raw(13, 11, 0, ctypes.addressof(old), 8)",
    "sigaction_usr1_set": "act = ctypes.create_string_buffer(152); raw(13, 10, ctypes.addressof(act), 0, 8)",
    "sigaction_cont_set": "act = ctypes.create_string_buffer(152); raw(13, 18, ctypes.addressof(act), 0, 8)",
    "sigaction_cont_read": "old = ctypes.create_string_buffer(152); raw(13, 18, 0, ctypes.addressof(old), 8)",
}
# (profile, case) -> "killed" or the errno answered (0: allowed)
EXPECTED = {
    ("runner", "thread"): 0, ("runner", "fork"): "killed", ("runner", "exec"): "killed",
    ("runner", "kill_parent"): "killed", ("runner", "setsid"): "killed", ("runner", "ptrace"): "killed",
    ("runner", "unshare"): "killed", ("runner", "bpf"): "killed", ("runner", "io_uring"): 38,
    ("runner", "socket_udp"): 13, ("runner", "socketpair"): 13, ("runner", "chmod"): 1, ("runner", "setxattr"): 1,
    ("runner", "sysv_msgget"): 13, ("runner", "sysv_shmget"): 13, ("runner", "posix_mq_open"): 13,
    ("builder", "sysv_msgget"): 13, ("builder", "sysv_shmget"): 13,
    ("runner", "affinity"): 1, ("runner", "pidfd_getfd"): "killed", ("runner", "open_by_handle_at"): "killed",
    ("runner", "perf_event_open"): 13, ("runner", "prctl_perf_disable"): 1, ("runner", "prctl_perf_enable"): 1,
    ("runner", "prctl_name"): 0, ("builder", "prctl_perf_disable"): 1,
    ("builder", "thread"): 0, ("builder", "fork"): 0, ("builder", "ptrace"): "killed", ("builder", "io_uring"): 38,
    ("builder", "socket_udp"): 13, ("builder", "chmod"): 1, ("builder", "unshare"): "killed",
    ("runner", "sigaction_segv_set"): 1, ("runner", "sigaction_bus_set"): 1, ("runner", "sigaction_segv_read"): 0,
    ("runner", "sigaction_usr1_set"): 0, ("builder", "sigaction_segv_set"): 0,
    ("runner", "sigaction_cont_set"): 1, ("runner", "sigaction_cont_read"): 0, ("builder", "sigaction_cont_set"): 0,
}


@pytest.mark.parametrize("profile, case", sorted(EXPECTED))
def test_each_system_call_gets_what_the_profile_says(profile, case):
    code = PRELUDE + textwrap.dedent(CASES[case])
    proc = subprocess.run([sys.executable, "-c", code, profile], capture_output=True, text=True, timeout=60,
                          start_new_session=True)
    expected = EXPECTED[(profile, case)]
    if expected == "killed":
        assert proc.returncode == SIGSYS, (proc.returncode, proc.stdout, proc.stderr[-300:])
    else:
        assert proc.returncode == 0, proc.stderr[-300:]
        assert f"errno {expected}" in proc.stdout, proc.stdout


def test_the_builder_can_still_run_a_compiler():
    code = ("import subprocess, sys\nfrom verifier.sandbox import seccomp\nassert seccomp.install('builder')\n"
            "print(subprocess.run(['g++', '--version'], capture_output=True).returncode)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "0", proc.stderr[-300:]


def test_every_jump_of_every_profile_fits_bpf():
    for profile in seccomp.PROFILES:
        assert all(jt <= 255 and jf <= 255 for _, jt, jf, _ in seccomp.program(profile, 1))
