"""The monitor's side of the fork server (verifier.sandbox.zygote): one server per environment, and a
handle on each process it starts.

:func:`server_for` says whether a sandbox process can come from a fork server (a runner or a
reference worker of this interpreter, on no accelerator: a CUDA or NPU context never crosses a fork)
and returns the one for its environment, started on first use. The server's key is the environment
minus what differs per process (its directory, caches, import links): everything read while torch is
imported (thread counts, allocator settings, the hidden devices) is the same in the server and in the
processes it forks. ``EVOKERNEL_FORK_SERVER=0`` turns it off: every process is exec'd through
verifier.sandbox.launcher as before. A server that fails to start or dies is not tried again; its
processes are exec'd instead.

:class:`ForkedProcess` is what :class:`verifier.sandbox.spawn.Sandboxed` holds for a forked launcher in
place of a :class:`kernelbench_npu.child_process.ChildProcess`: ``poll``, ``wait`` and ``kill`` act on
the launcher through a pidfd (it is the server's child, not ours), and its exit status is the second
line the launcher writes on the status pipe.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

from kernelbench_npu.child_process import ChildProcess
from verifier.sandbox import isolation, zygote
from verifier.sandbox.launcher import MONITOR_ENV

ENABLED_ENV = "EVOKERNEL_FORK_SERVER"
PER_PROCESS = ("HOME", "TMPDIR", "TORCH_EXTENSIONS_DIR", "TORCHINDUCTOR_CACHE_DIR", "PYTHONPATH")
BOOT_S = 120.0  # the server's own start-up (``import torch``) on a loaded machine
ANSWER_S = 30.0  # one fork, answered
KEPT_MOST = 2  # servers held (one per thread budget a process verified with lately)


class ServerFailed(Exception):
    """The fork server could not start a process (the caller execs it instead)."""


class Server:
    """One fork server and its control socket."""

    def __init__(self, env: dict[str, str]) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="evokernel-zygote-"))
        os.chmod(self.root, 0o711)
        work = self.root / "work"
        work.mkdir()
        self._sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._log = os.open(self.root / "server.log", os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        # the packages imported from where they are (their directory, which every process may read), not
        # through import links of the server's: a process it forked outlives the server and its directory
        env = {**env, "HOME": str(work), "TMPDIR": str(work), "PYTHONPATH": str(isolation.package_root()),
               MONITOR_ENV: str(os.getpid())}
        try:
            self.proc = ChildProcess([sys.executable, "-m", "verifier.sandbox.zygote", str(theirs.fileno())], env=env,
                                     cwd=work, pass_fds=(theirs.fileno(),), stdout=self._log)
        finally:
            theirs.close()
        self._lock = threading.Lock()
        self.pid = 0  # the server's pid once it said it is ready
        self.broken = ""

    def start(self, module: str, args: list[str], policy: isolation.Policy, env: dict[str, str], cwd: Path,
              fds: list[int]) -> tuple[int, int]:
        """Fork ``module``'s process: (the launcher's pid, a pidfd on it). ``fds``: the status pipe's write
        end, the log, then the process's own descriptors (``{keep:N}`` in ``args``)."""
        request = json.dumps({"module": module, "args": args, "policy": policy.to_env(), "env": env, "cwd": str(cwd)})
        with self._lock:
            if self.broken:
                raise ServerFailed(self.broken)
            try:
                if not self.pid:
                    self.pid = int(json.loads(self._receive(BOOT_S)[0] or b"{}").get("ready", 0))
                socket.send_fds(self._sock, [request.encode()], fds)
                data, pidfds = self._receive(ANSWER_S)
                pid = int(json.loads(data).get("pid", 0))
            except (OSError, ValueError, ServerFailed) as exc:
                self.broken = f"the fork server stopped: {exc}; {self.log_tail()}".strip("; ")
                self.close()
                raise ServerFailed(self.broken) from None
        if pid <= 0 or len(pidfds) != 1:
            for fd in pidfds:
                os.close(fd)
            raise ServerFailed("the fork server answered without a process")
        return pid, pidfds[0]

    def _receive(self, timeout_s: float) -> tuple[bytes, list[int]]:
        ready, _, _ = select.select([self._sock], [], [], timeout_s)
        if not ready:
            raise ServerFailed(f"no answer within {timeout_s:.0f} s")
        data, fds, _, _ = socket.recv_fds(self._sock, 1 << 16, 4)
        if not data:
            raise ServerFailed(f"the server {self.proc.exit_line(1.0)}")
        return data, fds

    def log_tail(self) -> str:
        try:
            return os.pread(self._log, 2000, max(0, os.fstat(self._log).st_size - 2000)).decode(errors="replace").strip()
        except OSError:
            return ""

    def close(self) -> None:
        """Stop the server (the processes it started live on: each watches the monitor itself)."""
        try:
            self._sock.close()
        except OSError:
            pass
        self.proc.kill(5.0)
        if self._log >= 0:
            os.close(self._log)
            self._log = -1
        from verifier.monitor.sites import remove_tree

        remove_tree(self.root)


_SERVERS: dict[frozenset, Server] = {}
_LOCK = threading.Lock()
_BROKEN: set[frozenset] = set()
_OWNER = [os.getpid()]  # the process the servers above belong to (a forked copy of it starts its own)


def _own_servers() -> None:
    """In a process forked from the one that started the servers (multiprocessing, a Dask worker), the
    inherited handles are the parent's: its requests and answers would cross ours. Forget them (call
    with the lock held)."""
    if _OWNER[0] != os.getpid():
        _OWNER[0] = os.getpid()
        _SERVERS.clear()
        _BROKEN.clear()


def enabled() -> bool:
    return os.environ.get(ENABLED_ENV, "1") != "0" and hasattr(os, "pidfd_open") and hasattr(socket, "send_fds") \
        and sys.platform == "linux"


def eligible(argv: list[str], env: dict[str, str]) -> bool:
    """A runner or a reference worker of this interpreter, with every accelerator hidden."""
    return (enabled() and len(argv) >= 3 and argv[0] == sys.executable and argv[1] == "-m" and argv[2] in zygote.ROLES
            and env.get("CUDA_VISIBLE_DEVICES") == "")


def server_for(env: dict[str, str]) -> Server | None:
    """The fork server for processes with this environment (started on first use); None once one for
    it has failed."""
    key = frozenset((k, v) for k, v in env.items() if k not in PER_PROCESS)
    stale = []
    with _LOCK:
        _own_servers()
        if key in _BROKEN:
            return None
        server = _SERVERS.get(key)
        if server is not None and server.broken:
            _BROKEN.add(key)
            del _SERVERS[key]
            return None
        if server is None:
            server = _SERVERS[key] = Server(env)
            while len(_SERVERS) > KEPT_MOST:
                stale.append(_SERVERS.pop(next(iter(_SERVERS))))
    for old in stale:
        old.close()
    return server


def server_pids() -> set[int]:
    """The pids of the fork servers running now (the parents of their processes' launchers)."""
    with _LOCK:
        _own_servers()
        return {s.proc.pid for s in _SERVERS.values() if s.proc.poll() is None}


@atexit.register
def close_all() -> None:
    with _LOCK:
        _own_servers()
        servers = list(_SERVERS.values())
        _SERVERS.clear()
    for server in servers:
        server.close()


class ForkedProcess:
    """A forked launcher, as :class:`ChildProcess` offers a child: ``exit_status`` reads what the
    launcher wrote last on the status pipe (None: nothing yet)."""

    def __init__(self, pid: int, pidfd: int, exit_status: Callable[[], int | None]) -> None:
        self._pid, self._pidfd, self._exit_status = pid, pidfd, exit_status
        self._code: int | None = None

    @property
    def pid(self) -> int:
        return self._pid

    def _exited(self, timeout_s: float) -> bool:
        if self._pidfd < 0:
            return True
        return bool(select.select([self._pidfd], [], [], max(0.0, timeout_s))[0])

    def poll(self) -> int | None:
        return self.wait(0.0)

    def wait(self, timeout_s: float | None = None) -> int | None:
        if self._code is None:
            if not self._exited(3600 * 24 if timeout_s is None else timeout_s):
                return None
            code = self._exit_status()
            self._code = -signal.SIGKILL if code is None else code  # no exit line: the launcher was killed
        return self._code

    def kill(self, wait_s: float = 10.0) -> None:
        """SIGKILL the launcher's process group (the process with it: it dies with its launcher too)."""
        if self._pidfd >= 0 and not self._exited(0.0):
            for target in (lambda: os.killpg(self._pid, signal.SIGKILL),
                           lambda: signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)):
                try:
                    target()
                except (ProcessLookupError, PermissionError, OSError):
                    pass
        deadline = time.monotonic() + wait_s
        self.wait(max(0.0, deadline - time.monotonic()))

    def release(self) -> None:
        if self._pidfd >= 0:
            os.close(self._pidfd)
            self._pidfd = -1
