"""Parent side of the sandbox: spawn a child module in its own session with a clean environment,
a private working directory, dedicated pipes for config and results, deadlines and a kill that
takes the whole process group down. Exit statuses become one-line reasons.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from verifier.sandbox import messages

_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
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


def clean_env(threads: int, workdir: Path) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(workdir), "TMPDIR": str(workdir),
        "LANG": "C.UTF-8", "PYTHONPATH": _PACKAGE_ROOT, "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1", "TORCH_EXTENSIONS_DIR": str(workdir / "torch_extensions"),
        "CUDA_VISIBLE_DEVICES": "",
    }
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = str(threads)
    return env


class SandboxProcess:
    """One sandboxed Python child (``python -m module IN_FD OUT_FD``) behind a disposable launcher,
    all in a new session whose process group is killed as a whole. ``config`` is the first message
    the child reads (verifier.sandbox.messages: it names the child's workdir and nonce)."""

    def __init__(self, module: str, config: Any, threads: int) -> None:
        workdir = Path(config.workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        to_r, self._to_w = os.pipe()
        self._from_r, from_w = os.pipe()
        self.log_path = workdir / "child.log"
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "verifier.sandbox.launcher", module, str(to_r), str(from_w)],
                pass_fds=(to_r, from_w),
                start_new_session=True, env=clean_env(threads, workdir), cwd=workdir,
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        os.close(to_r)
        os.close(from_w)
        self.nonce = config.nonce
        messages.send(self._to_w, self.nonce, config)

    def receive(self, deadline: float) -> Any:
        """The child's next typed message (verifier.sandbox.messages); ChannelError otherwise."""
        return messages.receive(self._from_r, deadline, self.nonce)

    def send(self, message: Any) -> None:
        try:
            messages.send(self._to_w, self.nonce, message)
        except OSError:
            pass  # the child is gone; its exit status tells why

    def kill(self) -> None:
        for target in (lambda: os.killpg(self.proc.pid, signal.SIGKILL), self.proc.kill):
            try:
                target()
            except (ProcessLookupError, PermissionError, OSError):
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    def close(self) -> None:
        self.kill()
        for fd in (self._to_w, self._from_r):
            try:
                os.close(fd)
            except OSError:
                pass

    def exit_reason(self, wait_s: float = 2.0) -> str:
        """Why the child stopped talking: its exit status as one line."""
        try:
            code = self.proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            return "stopped responding"
        if code < 0:
            sig = signal.Signals(-code)
            return f"the sandbox process died: {SIGNAL_REASONS.get(sig, sig.name)}"
        return f"the sandbox process exited with code {code} before reporting a result"

    def log_tail(self, lines: int = 8) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])[-1500:]


def deadline_in(seconds: float) -> float:
    return time.monotonic() + seconds
