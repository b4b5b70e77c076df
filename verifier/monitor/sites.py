"""Where each sandbox process lives, and starting it confined: the runner, the reference worker and
the builder (DESIGN.md §4).

A :class:`Site` is one process's private directory tree, made by the monitor under a fresh
``evokernel-*`` temp directory (mode 0711: a sandbox uid may pass through, not list it):

- ``work/``: the process's working directory, the only place it may write (its uid owns it);
- ``libs/`` (runner): libraries the monitor built, checked and placed; the runner reads them, only the
  monitor writes there;
- ``.imports-work/``: the PYTHONPATH links to this project's two packages (beside ``work``, so the
  process cannot swap them); ``work.process.log``: its stdout and stderr, read back by descriptor.

The runner and the reference worker boot (their own trusted start-up, then their seccomp filter)
before they get any work, so they can be started ahead of need (verifier.monitor.pool). Each gets an
observer page (runner) from the monitor: a sealed memory file, verifier.sandbox.observer.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from verifier.sandbox import fast_fill, isolation, messages as msg
from verifier.sandbox.arena import Arena
from verifier.sandbox.observer import PAGE_BYTES, ObserverPage
from verifier.sandbox.spawn import Sandboxed, clean_env

READ_ONLY_ROLES: tuple[str, ...] = ()  # every sandbox process writes its own directory (torch caches: the reference's workload count imports inductor)


@dataclass(frozen=True)
class RunnerSpec:
    """What a runner is booted for: pooled runners with the same spec are interchangeable."""

    backend: str
    threads: int
    memory_mb: int
    file_mb: int
    python: str = sys.executable
    observer: str = ""  # the native observer library ("" : Python fallback)
    toolchains: tuple[str, ...] = ()
    devices: bool = False
    device: str = "cpu"


class Site:
    def __init__(self, role: str, prefix: str = "evokernel-") -> None:
        self.role = role
        self.ready: msg.Ready | None = None
        self._ready_lock = threading.Lock()  # the pool may wait for a spare while a session takes it
        self.root = Path(tempfile.mkdtemp(prefix=prefix))
        os.chmod(self.root, 0o711)
        self.work = self.root / "work"
        self.work.mkdir()
        self.libs = self.root / "libs"
        self.process: Sandboxed | None = None

    def policy(self, toolchains: tuple[str, ...] = (), read: tuple[str, ...] = (), devices: bool = False,
               memory_mb: int = 0, file_mb: int = 0, threads: int = 0,
               packages: dict[str, str] | None = None) -> tuple[isolation.Policy, Path]:
        import_root = isolation.prepare_import_root(self.work, packages)
        toolchains = (*toolchains, *(packages or {}).values())
        writable = self.role not in READ_ONLY_ROLES
        cpus = isolation.compute_cpus(threads) if threads else ()
        policy = isolation.build_policy(self.role, self.work, writable=writable, toolchains=toolchains, read=read,
                                        import_root=import_root, devices=devices, memory_mb=memory_mb, file_mb=file_mb,
                                        cpus=cpus)
        isolation.hand_over(self.work, policy, writable)
        return policy, import_root

    def wait_ready(self, deadline: float) -> msg.Ready:
        """The process's Ready (read once: its channel carries nothing else before it is given work)."""
        with self._ready_lock:
            if self.ready is None:
                self.ready = self.process.receive(deadline, 1 << 16, (msg.Ready,))
            return self.ready

    def close(self) -> None:
        if self.process is not None:
            self.process.close()
            self.process = None
        remove_tree(self.root)


class RunnerSite(Site):
    """A booting or booted runner (verifier.sandbox.candidate_runner)."""

    def __init__(self, spec: RunnerSpec) -> None:
        super().__init__("runner", "evokernel-runner-")
        self.spec = spec
        self.libs.mkdir(mode=0o755)
        os.chmod(self.libs, 0o755)
        self.page = ObserverPage(Arena.create(PAGE_BYTES, "evokernel-observer"))
        read = (str(self.libs),) + ((str(Path(spec.observer).parent),) if spec.observer else ())
        policy, import_root = self.policy(spec.toolchains, read, spec.devices, spec.memory_mb, spec.file_mb, spec.threads,
                                          backend_packages(spec.backend))
        env = clean_env(spec.threads, self.work, import_root, spec.devices)
        page_fd = self.page.arena.fd
        self.process = Sandboxed([spec.python, "-m", "verifier.sandbox.candidate_runner", "{channel}", "{fd:0}"],
                                 policy, self.work, env, extra_fds=(page_fd,))
        self.process.send(msg.Boot(spec.backend, spec.threads, spec.observer, spec.device))

    def close(self) -> None:
        super().close()
        self.page.arena.close()


class ReferenceSite(Site):
    """A booting or booted reference worker (verifier.sandbox.reference_worker)."""

    def __init__(self, threads: int, memory_mb: int, devices: bool = False) -> None:
        super().__init__("reference", "evokernel-reference-")
        fill, self.fill_why = fast_fill.library()  # the timed sets' and trials' random fills (without it: torch's generator)
        read = (str(fill.parent),) if fill else ()
        policy, import_root = self.policy(read=read, devices=devices, memory_mb=memory_mb, threads=threads)
        env = clean_env(threads, self.work, import_root, devices)
        self.process = Sandboxed([sys.executable, "-m", "verifier.sandbox.reference_worker", "{channel}", str(threads),
                                  str(fill or ""), "devices" if devices else ""], policy, self.work, env)


class BuilderSite(Site):
    """One build job's directory and, once :meth:`run` is called, its confined builder."""

    def __init__(self) -> None:
        super().__init__("builder", "evokernel-build-")

    def start(self, argv: tuple[str, ...], python: bool, toolchains: tuple[str, ...], threads: int,
              memory_mb: int, file_mb: int, extra_env: dict[str, str] | None = None) -> Sandboxed:
        policy, import_root = self.policy(toolchains, memory_mb=memory_mb, file_mb=file_mb)
        env = clean_env(threads, self.work, import_root if python else None, extra={"MAX_JOBS": str(threads),
                                                                                   **(extra_env or {})})
        command = list(argv)
        if python:
            command[0] = sys.executable
        self.process = Sandboxed(command, policy, self.work, env, channel=False)
        return self.process


def backend_packages(name: str) -> dict[str, str]:
    """{top-level package: its directory} for a backend named ``package.module:Class`` that lives outside
    this project's packages (a plugin, or a test's backend): the runner must import it too."""
    import importlib.util

    if ":" not in name:
        return {}
    top = name.partition(":")[0].split(".")[0]
    if top in isolation.PACKAGES:
        return {}
    spec = importlib.util.find_spec(top)
    where = (list(spec.submodule_search_locations or []) or [None])[0] if spec else None
    return {top: where} if where else {}


def remove_tree(root: Path) -> None:
    """Remove a site, including what a sandbox made unreadable (chmod 000)."""

    def unlock(func, path, _exc) -> None:
        try:
            os.chmod(os.path.dirname(path), 0o700)
            if os.path.isdir(path) and not os.path.islink(path):
                os.chmod(path, 0o700)
            func(path)
        except OSError:
            pass

    shutil.rmtree(root, onerror=unlock)
