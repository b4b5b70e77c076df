"""The monitor's handle on one sandbox process: started confined, talked to over a private socket pair,
killed as a whole.

:class:`Sandboxed` starts ``python -m verifier.sandbox.launcher`` in a new session with a clean
environment and the role's policy (verifier.sandbox.isolation); the launcher makes the namespaces and
starts the process itself, confined before it runs, reports its pid, and kills it if this process
dies first. A runner or a reference worker comes from a fork server instead where one can start it
(verifier.sandbox.forked): the same launcher steps in a process forked from one that imported torch
already, so that the process skips its 1.5 s start-up. The process's stdout and
stderr go to a log the monitor opened and reads back through its own descriptor, never by path (the
process owns its directory and could put a link there). Exit statuses become one-line reasons.
"""

from __future__ import annotations

import json
import os
import select
import sys
import threading
import time
from pathlib import Path
from typing import Any, Sequence

from kernelbench_npu.child_process import ChildProcess, status_line
from verifier.sandbox import forked, isolation, messages
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
        own = ([theirs.fileno()] if theirs is not None else []) + list(extra_fds)
        command = [_fill(a, theirs.fileno() if theirs is not None else -1, list(extra_fds)) for a in argv]
        env = {**env, isolation.POLICY_ENV: policy.to_env(), MONITOR_ENV: str(os.getpid())}
        self._status = StatusLines(status_r)
        try:
            self.proc = self._forked(argv, policy, env, status_w, own) or self._launched(command, env, status_w, own)
        finally:
            os.close(status_w)
            if theirs is not None:
                theirs.close()
        self.channel = Channel(ours) if ours is not None else None
        self._pid: int | None = None
        self.namespaces = ""  # why the launcher could not make namespaces ("" when it did)
        self.started = time.monotonic()

    def _launched(self, command: list[str], env: dict[str, str], status_w: int, own: list[int]) -> ChildProcess:
        """``python -m verifier.sandbox.launcher``, which execs ``command``."""
        for fd in own:
            os.set_inheritable(fd, True)
        launcher = [sys.executable, "-m", "verifier.sandbox.launcher", str(status_w), ",".join(map(str, own)), "--",
                    *command]
        return ChildProcess(launcher, env=env, cwd=self.workdir, pass_fds=(status_w, *own), stdout=self._log_fd)

    def _forked(self, argv: Sequence[str], policy: isolation.Policy, env: dict[str, str], status_w: int,
                own: list[int]) -> forked.ForkedProcess | None:
        """The same process forked by a fork server (verifier.sandbox.zygote) where one can start it."""
        process_env = {k: v for k, v in env.items() if k not in (isolation.POLICY_ENV, MONITOR_ENV)}
        if not forked.eligible(list(argv), process_env):
            return None
        server = forked.server_for(process_env)
        if server is None:
            return None
        channel_at = own[0] if own else -1
        args = [_fill(a, channel_at, own[1:], keep=True) for a in argv[3:]]
        try:
            pid, pidfd = server.start(argv[2], args, policy, process_env, self.workdir, [status_w, self._log_fd, *own])
        except forked.ServerFailed:
            return None
        return forked.ForkedProcess(pid, pidfd, self._status.exit_status)

    # ---- identity ----------------------------------------------------------------------------------
    def pid(self, timeout_s: float = LAUNCH_S) -> int:
        """The process's pid as the monitor sees it (0 if the launcher failed)."""
        if self._pid is None:
            try:
                status = json.loads(self._status.first(timeout_s) or "{}")
                self._pid = int(status.get("pid", 0))
                self.namespaces = str(status.get("namespaces", ""))
            except (ValueError, TypeError, AttributeError):
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
        own = "own PID and network namespaces" if isolation.own_pid_namespace(self.policy) else "own network namespace"
        return isolation.Isolation(f"{base.mechanism}, {own}", base.warnings)

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
        self._status.close()
        if isinstance(self.proc, forked.ForkedProcess):
            self.proc.release()
        if self._log_fd >= 0:
            try:
                os.close(self._log_fd)
            except OSError:
                pass
            self._log_fd = -1

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


def _fill(arg: str, channel: int, extra: list[int], keep: bool = False) -> str:
    """``{channel}`` and ``{fd:N}`` as descriptor numbers (``keep``: as the fork server's ``{keep:N}``,
    the channel first, then the extra descriptors)."""
    if arg == "{channel}":
        return "{keep:0}" if keep else str(channel)
    if arg.startswith("{fd:") and arg.endswith("}"):
        n = int(arg[4:-1])
        return f"{{keep:{n + 1}}}" if keep else str(extra[n])
    return arg


class StatusLines:
    """The launcher's status pipe: a first line (the process's pid, once it is confined) and, from a
    forked launcher, a last one (its exit status). Read under a lock: a reference worker's reader thread
    asks for the exit status when its channel ends while the monitor's thread, which killed the worker,
    waits for it, and one of them closing the pipe at its end must not leave the other selecting on a
    closed descriptor ("Bad file descriptor", seen when a pool closed a primed worker)."""

    def __init__(self, fd: int) -> None:
        self._fd, self._buffer, self._lines = fd, b"", []
        self._first: str | None = None
        self._lock = threading.RLock()  # first() and exit_status() read under it; close() at the end too

    def first(self, timeout_s: float) -> str:
        with self._lock:
            if self._first is None:
                self._read(time.monotonic() + timeout_s, until_line=True)
                self._first = self._lines.pop(0) if self._lines else ""
            return self._first

    def exit_status(self) -> int | None:
        """The exit line's status once the launcher has exited (None: it wrote none)."""
        with self._lock:
            self._read(time.monotonic() + 1.0, until_line=False)
            lines = list(self._lines)
        for line in lines:
            try:
                data = json.loads(line)
            except ValueError:
                continue
            if isinstance(data, dict) and isinstance(data.get("exit"), int):
                return data["exit"]
        return None

    def _read(self, deadline: float, until_line: bool) -> None:
        """Lines until ``deadline`` (or the first line, or the pipe's end); its callers hold the lock."""
        while self._fd >= 0 and not (until_line and self._lines):
            ready, _, _ = select.select([self._fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                return
            chunk = os.read(self._fd, 4096)
            if not chunk:
                self.close()
                return
            self._buffer += chunk
            *lines, self._buffer = self._buffer.split(b"\n")
            self._lines += [line.decode(errors="replace") for line in lines]

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
