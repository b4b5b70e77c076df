"""The monitor's handle on one sandbox process: started confined, talked to over a private socket pair,
killed as a whole.

:class:`Sandboxed` starts ``python -m verifier.sandbox.launcher`` in a new session with a clean
environment and the role's policy (verifier.sandbox.isolation); the launcher makes the namespaces and
starts the process itself, confined before it runs, reports its pid, and kills it if this process
dies first. The process's stdout and
stderr go to a log the monitor opened and reads back through its own descriptor, never by path (the
process owns its directory and could put a link there). Exit statuses become one-line reasons.
"""

from __future__ import annotations

import json
import os
import select
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from kernelbench_npu.child_process import ChildProcess, status_line
from verifier.sandbox import isolation, messages
from verifier.sandbox.channel import Channel, ChannelClosed, socket_pair
from verifier.sandbox.launcher import MONITOR_ENV

DEVICE_SELECTION = ("CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "TORCH_CUDA_ARCH_LIST", "ASCEND_RT_VISIBLE_DEVICES",
                    "ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "LD_LIBRARY_PATH")
LAUNCH_S = 30.0  # the launcher's own start-up, on a loaded machine
# glibc's allocator as in a long-running process: blocks below 32 MiB come from the heap and freed
# memory stays mapped, so a window's fresh outputs reuse pages instead of faulting new ones in (the
# dynamic threshold would otherwise hand memory back whenever a window's outputs are freed together).
# A one-layer loop in a process with glibc's defaults differs: there torch's convolution re-faults its
# scratch on every call (docs/timing.md, "Figures"; benchmarks.timing_fidelity times both).
ALLOCATOR = {"MALLOC_MMAP_THRESHOLD_": str(32 << 20), "MALLOC_TRIM_THRESHOLD_": str(16 << 30)}


def clean_env(threads: int, workdir: Path, import_root: Path | None, devices: bool = False,
              extra: dict[str, str] | None = None) -> dict[str, str]:
    """The whole environment of a sandbox process. ``devices``: the backend runs on a GPU/NPU, so the
    caller's device selection passes through; otherwise accelerators are hidden."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(workdir), "TMPDIR": str(workdir),
        "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1",
        "TORCH_EXTENSIONS_DIR": str(workdir / "torch_extensions"), "TORCHINDUCTOR_CACHE_DIR": str(workdir / "inductor"),
        # OpenMP's wait policy stays its default (idle threads spin a while before they sleep), as in a
        # user's process: a process waiting for its next window is stopped (verifier.monitor.freeze), so
        # its spinning steals nothing.
        **ALLOCATOR,
    }
    if import_root is not None:
        env["PYTHONPATH"] = str(import_root)
    if not devices:
        env["CUDA_VISIBLE_DEVICES"] = ""
    else:
        env.update({k: v for k, v in os.environ.items() if k in DEVICE_SELECTION})
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = str(threads)
    env.update(extra or {})
    return env


class Sandboxed:
    """One confined process. ``argv`` may name ``{channel}`` and ``{fd:N}`` placeholders: the peer end
    of the channel and the extra inherited descriptors, by their numbers in the process."""

    def __init__(self, argv: Sequence[str], policy: isolation.Policy, workdir: Path, env: dict[str, str],
                 extra_fds: Sequence[int] = (), channel: bool = True, log_name: str = "process.log") -> None:
        self.policy = policy
        self.workdir = Path(workdir)
        self._log_fd = os.open(self.workdir.parent / f"{self.workdir.name}.{log_name}",
                               os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        ours, theirs = socket_pair() if channel else (None, None)
        status_r, status_w = os.pipe()
        keep = ([theirs.fileno()] if theirs is not None else []) + list(extra_fds)
        for fd in extra_fds:
            os.set_inheritable(fd, True)
        command = [a.replace("{channel}", str(theirs.fileno()) if theirs is not None else "") for a in argv]
        launcher = [sys.executable, "-m", "verifier.sandbox.launcher", str(status_w), ",".join(map(str, keep)), "--",
                    *command]
        env = {**env, isolation.POLICY_ENV: policy.to_env(), MONITOR_ENV: str(os.getpid())}
        try:
            self.proc = ChildProcess(launcher, env=env, cwd=self.workdir, pass_fds=(status_w, *keep),
                                     stdout=self._log_fd)
        finally:
            os.close(status_w)
            if theirs is not None:
                theirs.close()
        self.channel = Channel(ours) if ours is not None else None
        self._status_r = status_r
        self._pid: int | None = None
        self.namespaces = ""  # why the launcher could not make namespaces ("" when it did)
        self.started = time.monotonic()

    # ---- identity ----------------------------------------------------------------------------------
    def pid(self, timeout_s: float = LAUNCH_S) -> int:
        """The process's pid as the monitor sees it (0 if the launcher failed)."""
        if self._pid is None:
            self._pid = 0
            line = b""
            deadline = time.monotonic() + timeout_s
            while not line.endswith(b"\n") and time.monotonic() < deadline:
                ready, _, _ = select.select([self._status_r], [], [], max(0.0, deadline - time.monotonic()))
                if not ready:
                    break
                chunk = os.read(self._status_r, 4096)
                if not chunk:
                    break
                line += chunk
            try:
                status = json.loads(line.decode() or "{}")
                self._pid = int(status.get("pid", 0))
                self.namespaces = str(status.get("namespaces", ""))
            except (ValueError, TypeError):
                self._pid = 0
        return self._pid

    def known_pid(self) -> int:
        """The pid if the launcher has reported it already (0 otherwise): never waits."""
        return self._pid or 0

    def isolation(self) -> isolation.Isolation:
        base = isolation.describe(self.policy)
        self.pid()
        if self.namespaces:
            return isolation.Isolation(base.mechanism, base.warnings + (f"network isolation unavailable: "
                                                                        f"{self.namespaces}",))
        return isolation.Isolation(base.mechanism + ", own PID and network namespaces", base.warnings)

    # ---- talking -----------------------------------------------------------------------------------
    def send(self, message: Any, fds: tuple[int, ...] = ()) -> bool:
        """False if the process is gone (its exit status tells why)."""
        try:
            messages.send(self.channel, message, fds)
            return True
        except OSError:
            return False

    def receive(self, deadline: float, max_bytes: int, expect: tuple[type, ...] = ()) -> Any:
        if self.channel is None:
            raise ChannelClosed("this process has no channel")
        return messages.receive(self.channel, deadline, max_bytes, expect)[0]

    # ---- ending ------------------------------------------------------------------------------------
    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        self.proc.kill()

    def wait(self, timeout_s: float) -> int | None:
        return self.proc.wait(timeout_s)

    def close(self) -> None:
        """Kill the process group, then close the channel, the status pipe and the log (once each)."""
        self.kill()
        self.proc.wait(5.0)
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        for name in ("_status_r", "_log_fd"):
            fd = getattr(self, name)
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
                setattr(self, name, -1)

    def exit_reason(self, wait_s: float = 2.0) -> str:
        """Why the process stopped talking: its exit status as one line."""
        code = self.proc.wait(wait_s)
        if code is None:
            return "stopped responding"
        if code == 0:
            return "the sandbox process exited before reporting a result"
        return f"the sandbox process {status_line(code)}"

    def log_text(self, max_bytes: int = 1 << 20) -> str:
        """Everything the process printed (its last ``max_bytes``)."""
        try:
            size = os.fstat(self._log_fd).st_size
            return os.pread(self._log_fd, max_bytes, max(0, size - max_bytes)).decode(errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 8, max_bytes: int = 1 << 16) -> str:
        try:
            size = os.fstat(self._log_fd).st_size
            data = os.pread(self._log_fd, max_bytes, max(0, size - max_bytes))
        except OSError:
            return ""
        text = data.decode(errors="replace")
        return "\n".join(text.splitlines()[-lines:])[-1500:]
