"""Child processes held at arm's length: the one subprocess runner of the project.

Owns starting a child in its own session (so a kill takes down everything it spawned), killing that
process group, and turning an exit status into one line a user or an LLM can act on. Three callers
share it: the lint pool's workers (kernelbench_npu.lint), the verifier's sandbox processes
(verifier.sandbox.runner) and the build tools the GPU/NPU backends run (verifier.backends.toolrun).
It lives here, in the lowest package, because the verifier may import kernelbench_npu but not the
reverse. What each caller says over its pipes (JSON lines, typed sandbox messages) stays its own.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import IO, Mapping, Sequence

SIGNAL_REASONS = {
    signal.SIGSEGV: "segmentation fault (invalid memory access)",
    signal.SIGBUS: "bus error (invalid memory access)",
    signal.SIGSYS: "killed by the sandbox: a forbidden system call (process creation, exec, signalling "
                   "another process or raising resource limits)",
    signal.SIGKILL: "killed (out of memory, or by the verifier's timeout)",
    signal.SIGABRT: "aborted (e.g. a failed assertion or std::bad_alloc)",
    signal.SIGFPE: "floating-point exception (e.g. integer division by zero)",
    signal.SIGILL: "illegal instruction",
    signal.SIGXFSZ: "file size limit exceeded",
    signal.SIGXCPU: "CPU time limit exceeded",
}

Output = int | IO | None  # what Popen accepts for stdout/stderr: a descriptor, a file, PIPE/DEVNULL, None


def status_line(code: int) -> str:
    """An exit status as words: "killed by SIGSEGV: segmentation fault (...)" or "exited with code 3"."""
    if code < 0:
        sig = signal.Signals(-code)
        reason = SIGNAL_REASONS.get(sig)
        return f"killed by {sig.name}" + (f": {reason}" if reason else "")
    return f"exited with code {code}"


class ChildProcess:
    """A child in a new session (its own process group), started with exactly the environment given.

    ``pass_fds`` are inherited by the child (pipes it talks on); everything else is closed. ``kill``
    signals the whole group, so grandchildren (a compiler's cc1plus, a sandbox behind its launcher)
    go with it.
    """

    def __init__(self, argv: Sequence[str | os.PathLike], *, env: Mapping[str, str], cwd: str | os.PathLike | None = None,
                 pass_fds: Sequence[int] = (), stdin: Output = subprocess.DEVNULL, stdout: Output = subprocess.DEVNULL,
                 stderr: Output = subprocess.STDOUT, text: bool = False) -> None:
        self.argv = tuple(str(a) for a in argv)
        self.proc = subprocess.Popen(self.argv, env=dict(env), cwd=None if cwd is None else str(cwd),
                                     pass_fds=tuple(pass_fds), start_new_session=True, stdin=stdin,
                                     stdout=stdout, stderr=stderr, text=text, errors="replace" if text else None)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def poll(self) -> int | None:
        return self.proc.poll()

    def wait(self, timeout_s: float | None = None) -> int | None:
        """The exit status, or None if the child is still running after ``timeout_s``."""
        try:
            return self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def communicate(self, timeout_s: float) -> tuple[str, str] | None:
        """Read stdout/stderr to the end (both piped); None if the child is still running at the deadline."""
        try:
            return self.proc.communicate(timeout=max(timeout_s, 0.1))
        except subprocess.TimeoutExpired:
            return None

    def kill(self, wait_s: float = 10.0) -> None:
        """SIGKILL the whole process group (then the child itself, should it have left the group)."""
        for target in (lambda: os.killpg(self.proc.pid, signal.SIGKILL), self.proc.kill):
            try:
                target()
            except (ProcessLookupError, PermissionError, OSError):
                pass
        self.wait(wait_s)

    def exit_line(self, wait_s: float = 2.0) -> str:
        """Why the child stopped: its exit status as one line, or "stopped responding" if it has not."""
        code = self.wait(wait_s)
        return "stopped responding" if code is None else status_line(code)


@dataclass(frozen=True)
class Finished:
    """A tool run to its end or killed at its deadline, with everything it printed."""

    returncode: int  # negative when killed by a signal; 124 when the deadline killed it
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False


def run_to_end(argv: Sequence[str | os.PathLike], cwd: str | os.PathLike, timeout_s: float,
               env: Mapping[str, str]) -> Finished:
    """Run a tool in its own session, capture its output, kill its whole group at the deadline.

    A tool that cannot be executed at all (not found, not executable) is reported as exit code 127
    with the reason, as a shell would.
    """
    start = time.perf_counter()
    try:
        child = ChildProcess(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except OSError as exc:
        return Finished(127, "", f"{argv[0]}: cannot execute ({exc.strerror})", time.perf_counter() - start)
    output = child.communicate(timeout_s)
    if output is not None:
        return Finished(child.proc.returncode, *output, time.perf_counter() - start)
    child.kill(wait_s=0)
    out, err = child.proc.communicate()
    return Finished(124, out, err + f"\ntimed out after {timeout_s:.0f} s", time.perf_counter() - start,
                    timed_out=True)
