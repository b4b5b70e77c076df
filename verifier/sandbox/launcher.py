"""A disposable intermediate process between the monitor and one sandbox process.

``python -m verifier.sandbox.launcher STATUS_FD KEEP_FDS -- ARGV...`` (started by
verifier.sandbox.spawn in a new session) does, with the policy from ``EVOKERNEL_SANDBOX_POLICY``
(removed from the environment it passes on):

1. new PID and network namespaces (verifier.sandbox.isolation.enter_namespaces), so the process it
   starts is pid 1 of its own namespace (every descendant dies with it) and reaches no address. A process
   that opens a GPU gets no PID namespace (isolation.own_pid_namespace): the launcher is then the subreaper
   of everything it starts, and once the process has ended it kills whatever the process left behind
   (a daemon that double-forked and left its session is still beneath it);
2. starts ARGV with the uid switch (``Popen(user=..., group=...)``) and, in the forked child before
   ``exec``, :func:`verifier.sandbox.isolation.apply` (death with the launcher, limits, capabilities,
   no_new_privs, Landlock, the builder's seccomp filter); KEEP_FDS (comma-separated) are inherited;
3. writes one JSON line to STATUS_FD: the process's pid (as the monitor sees it) and, if the
   namespaces could not be made, why (the verdict warns); then waits and mirrors the exit status (a
   signal death is re-raised on itself, so the monitor still reads "killed by SIGSYS");
4. while it waits, watches the monitor (``EVOKERNEL_MONITOR_PID``, its parent, through a pidfd): when
   the monitor dies, however it died (SIGKILL, the OOM killer), the process is killed. A process the
   monitor had stopped (SIGSTOP: a side between its timed windows, a spare held while a window runs)
   would otherwise never read the end of its channel and stay stopped, holding its memory, forever.

This process has a single thread, so the fork is safe. A policy that cannot be applied stops the
verification (exit code 70, reason in the log) rather than running the process unconfined.
"""

from __future__ import annotations

import ctypes
import json
import os
import select
import signal
import subprocess
import sys

from verifier.sandbox import isolation

ISOLATION_FAILED = 70
MONITOR_ENV = "EVOKERNEL_MONITOR_PID"  # the pid of the process that started this launcher (its parent)
PR_SET_CHILD_SUBREAPER = 36


def confine(policy: isolation.Policy) -> None:
    """Apply the policy in the process about to run (a failure is said on its stderr, then raised)."""
    try:
        isolation.apply(policy)
    except BaseException as exc:
        os.write(2, f"sandbox isolation failed: {exc!r}\n".encode())
        raise


def main(argv: list[str]) -> int:
    status_fd, keep = int(argv[1]), tuple(int(fd) for fd in argv[2].split(",") if fd)
    command = argv[argv.index("--") + 1:]
    policy = isolation.Policy.from_env(os.environ.pop(isolation.POLICY_ENV, "{}"))
    monitor = watch_monitor(os.environ.pop(MONITOR_ENV, ""))
    if monitor == -1:
        print("sandbox launcher: the monitor that started it is gone", file=sys.stderr)
        return ISOLATION_FAILED
    os.set_inheritable(status_fd, False)  # the process gets its channels (KEEP_FDS), never this pipe
    reaper = not isolation.own_pid_namespace(policy)  # no PID namespace: this launcher takes its place
    try:
        isolation.enter_namespaces(pid=not reaper)
        namespaces = ""
    except OSError as exc:
        namespaces = f"no PID and network namespaces here ({exc.strerror or exc})"
    if reaper and ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print("sandbox launcher: cannot become the subreaper of the process it starts", file=sys.stderr)
        return ISOLATION_FAILED
    switch = {} if policy.uid is None else {"user": policy.uid, "group": policy.gid, "extra_groups": list(policy.groups)}
    try:  # close_fds=False keeps the /proc/self pin apply() opens; pass_fds keeps the channels
        child = subprocess.Popen(command, close_fds=False, env=dict(os.environ), preexec_fn=lambda: confine(policy),
                                 **switch)
    except (subprocess.SubprocessError, OSError) as exc:
        print(f"sandbox launcher: cannot start {command[:1]}: {exc}", file=sys.stderr)
        os.write(status_fd, (json.dumps({"pid": 0, "error": str(exc)}) + "\n").encode())
        return ISOLATION_FAILED
    os.write(status_fd, (json.dumps({"pid": child.pid, "namespaces": namespaces}) + "\n").encode())
    for fd in (status_fd, *keep):
        try:
            os.close(fd)
        except OSError:
            pass
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    code = child.returncode = wait_watching(child.pid, monitor)
    if reaper:
        kill_descendants(policy.uid)
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


def watch_monitor(expected: str) -> int | None:
    """A pidfd on the monitor (readable once it has exited); None where none can be opened (no pid
    given, or a kernel without pidfds: the process then dies only with its channel's end), -1 where the
    monitor is already gone (this launcher was reparented)."""
    if not expected.isdigit():
        return None
    try:
        watch = os.pidfd_open(int(expected))
    except (AttributeError, OSError):
        return None
    if os.getppid() != int(expected):  # gone before the pidfd was opened (the pid may be another's now)
        os.close(watch)
        return -1
    return watch


def _children() -> set[int]:
    """This process's children (every orphan of what it started, as their subreaper)."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid():
            found.add(int(entry))
    return found


def kill_descendants(uid: int | None = None, rounds: int = 100) -> None:
    """SIGKILL whatever is left beneath this launcher, until nothing is. Where the process ran as a dedicated
    ``uid``, first every process of that uid at once: ``kill(-1)`` from a helper of that uid, which no fork
    can outrun (a chain of processes that each start the next and exit outran the rounds below);
    then, round after round, this launcher's children (a killed process's children come to it next)."""
    if uid is not None and os.getuid() == 0:
        helper = os.fork()
        if helper == 0:
            try:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
                for _ in range(1000):
                    os.kill(-1, signal.SIGKILL)  # every process of this uid but the caller
            except BaseException:
                pass
            os._exit(0)  # ProcessLookupError: none left
        os.waitpid(helper, 0)
    for _ in range(rounds):
        children = _children()
        if not children:
            return
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid in children:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def wait_watching(pid: int, monitor: int | None) -> int:
    """The exit status of our child ``pid`` (negative: the signal that killed it); if the monitor exits
    first, the child is killed first (it is pid 1 of its namespace: everything it started goes with it)."""
    try:
        own = os.pidfd_open(pid) if monitor is not None else None
    except OSError:
        own = None
    if own is not None:
        poller = select.poll()
        poller.register(own, select.POLLIN)
        poller.register(monitor, select.POLLIN)
        while True:
            ready = {fd for fd, _ in poller.poll()}
            if own in ready:
                break
            if monitor in ready:
                signal.pidfd_send_signal(own, signal.SIGKILL)
                break
        os.close(own)
    while True:
        try:
            return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        except InterruptedError:
            continue


if __name__ == "__main__":
    sys.exit(main(sys.argv))
