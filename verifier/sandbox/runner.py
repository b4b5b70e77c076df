"""Parent side of the sandbox: spawn a child module in its own session with a clean environment,
a private working directory, dedicated pipes for config and results, deadlines and a kill that
takes the whole process group down. Exit statuses become one-line reasons.

Each process gets an isolation policy (:mod:`verifier.sandbox.isolation`, applied by the launcher):
the candidate child may write its working directory only, the reference worker nothing. The
child's log is read back through the descriptor the parent opened, never by path (the child owns
its directory and could put a link to any file there).
"""

from __future__ import annotations

import importlib.util
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from kernelbench_npu.child_process import SIGNAL_REASONS, ChildProcess
from verifier.sandbox import isolation, messages
from verifier.sandbox.channel import ChannelClosed

READ_ONLY_MODULES = frozenset({"verifier.sandbox.reference_worker"})  # never writes a file
DEVICE_SELECTION = ("CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "TORCH_CUDA_ARCH_LIST", "ASCEND_RT_VISIBLE_DEVICES",
                    "ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "LD_LIBRARY_PATH")


def clean_env(threads: int, workdir: Path, import_root: Path, devices: bool = False) -> dict[str, str]:
    """The whole environment of a sandbox process. ``devices``: the backend runs on a GPU/NPU, so the
    caller's device selection passes through; otherwise accelerators are hidden."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(workdir), "TMPDIR": str(workdir),
        "LANG": "C.UTF-8", "PYTHONPATH": str(import_root), "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1", "TORCH_EXTENSIONS_DIR": str(workdir / "torch_extensions"),
    }
    if not devices:
        env["CUDA_VISIBLE_DEVICES"] = ""
    else:
        env.update({k: v for k, v in os.environ.items() if k in DEVICE_SELECTION})
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
        self.log_path = workdir / "child.log"
        self._log_fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        toolchains, packages = _backend_paths(config)
        prepared = isolation.prepare(workdir, module not in READ_ONLY_MODULES, toolchains, packages)
        self.isolation = isolation.describe(prepared.policy)
        devices = getattr(config, "backend", None) not in (None, "cpu")
        env = {**clean_env(threads, workdir, prepared.import_root, devices), isolation.POLICY_ENV: prepared.policy.to_env()}
        to_r, self._to_w = os.pipe()
        self._from_r, from_w = os.pipe()
        self.child = ChildProcess([sys.executable, "-m", "verifier.sandbox.launcher", module, str(to_r), str(from_w)],
                                  env=env, cwd=workdir, pass_fds=(to_r, from_w), stdout=self._log_fd)
        os.close(to_r)
        os.close(from_w)
        self.nonce = config.nonce
        messages.send(self._to_w, self.nonce, config)

    def receive(self, deadline: float) -> Any:
        """The child's next typed message (verifier.sandbox.messages); ChannelError otherwise."""
        if self._from_r < 0:
            raise ChannelClosed("the sandbox channel is closed")
        return messages.receive(self._from_r, deadline, self.nonce)

    def send(self, message: Any) -> None:
        try:
            messages.send(self._to_w, self.nonce, message)
        except OSError:
            pass  # the child is gone; its exit status tells why

    def kill(self) -> None:
        self.child.kill()

    def close(self) -> None:
        """Kill the process and close the pipes and the log (once: a number closed twice could by then
        be another verification's descriptor)."""
        self.kill()
        fds, (self._to_w, self._from_r, self._log_fd) = (self._to_w, self._from_r, self._log_fd), (-1, -1, -1)
        for fd in fds:
            if fd < 0:
                continue
            try:
                os.close(fd)
            except OSError:
                pass

    def exit_reason(self, wait_s: float = 2.0) -> str:
        """Why the child stopped talking: its exit status as one line."""
        code = self.child.wait(wait_s)
        if code is None:
            return "stopped responding"
        if code < 0:
            sig = signal.Signals(-code)
            return f"the sandbox process died: {SIGNAL_REASONS.get(sig, sig.name)}"
        return f"the sandbox process exited with code {code} before reporting a result"

    def log_tail(self, lines: int = 8, max_bytes: int = 1 << 16) -> str:
        try:
            size = os.fstat(self._log_fd).st_size
            data = os.pread(self._log_fd, max_bytes, max(0, size - max_bytes))
        except OSError:
            return ""
        text = data.decode(errors="replace")
        return "\n".join(text.splitlines()[-lines:])[-1500:]


def _backend_paths(config: Any) -> tuple[tuple[str, ...], dict[str, str]]:
    """(read-only toolchain directories of the backend the process compiles with, and, for a backend
    named ``package.module:Class`` outside the Python environment, {package: its directory})."""
    name = getattr(config, "backend", None)  # the reference worker's config names none
    if not name:
        return (), {}
    from verifier.backends import get_backend

    packages = {}
    if ":" in name:
        top = name.partition(":")[0].split(".")[0]
        spec = importlib.util.find_spec(top)
        where = (spec.submodule_search_locations or [None])[0] if spec else None
        if where and top not in isolation.PACKAGES:
            packages[top] = where
    return tuple(get_backend(name).sandbox_paths()), packages


def deadline_in(seconds: float) -> float:
    return time.monotonic() + seconds
