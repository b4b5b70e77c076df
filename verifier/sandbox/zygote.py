"""A fork server for the runner and the reference worker: ``import torch`` paid once, not per process.

A fresh runner spends 1.5 s of CPU on the interpreter and ``import torch`` before its first message
(most of a corpus verification's CPU on a 2-core machine). ``python -m verifier.sandbox.zygote
CONTROL_FD`` is started by the monitor (verifier.sandbox.forked) with the environment its processes
will have, as the monitor's own uid and unconfined, like the launcher. It imports torch, numpy and the
two roles' modules (trusted code only; nothing else ever runs in it), then serves requests on its
control socket (``SOCK_SEQPACKET``; the monitor holds the only other end): one JSON request, its
descriptors by ``SCM_RIGHTS`` (the status pipe, the log, the process's own descriptors). For each it
forks a launcher and answers with a pidfd on it.

The forked launcher does what verifier.sandbox.launcher does for an exec'd process, in the same
order: a new session, new PID and network namespaces, then it forks the process, which switches to
the policy's uid and groups, applies :func:`verifier.sandbox.isolation.apply` (death with the launcher,
limits, capabilities, no_new_privs, Landlock) and only then runs the role's ``main`` in place of
``exec``. The launcher reports the pid once the process is confined (or why it could not be, exit 70),
waits for it while watching the monitor, and writes its exit status as a second status line.

What a forked process shares with the server, and why that is safe (docs/verifier.md, "Fork server"):
the server's memory (copy-on-write: torch's imported modules; it never holds candidate code, seeds,
outputs or anything a verification decides: requests carry a policy, an environment and a directory),
and its address-space layout (a process can already read its own ``/proc/self/maps``). Every
descriptor but the process's own is closed before it is confined. The server runs no torch operation,
so no thread pool exists at a fork (numpy's OpenBLAS pool restarts itself after one).
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import logging
import os
import select
import signal
import socket
import sys
import traceback

from verifier.sandbox import isolation, privileges
from verifier.sandbox.launcher import ISOLATION_FAILED, MONITOR_ENV, confine, wait_watching, watch_monitor

ROLES = ("verifier.sandbox.candidate_runner", "verifier.sandbox.reference_worker")
MAX_REQUEST = 1 << 20
MAX_FDS = 16
PR_SET_DUMPABLE = 4


MODE_DECIDED_AT_IMPORT = ("triton",)  # a backend sets its mode before the first import (interpreter or compiled)
# What the roles import after their start unless the server has: the runner's loaders (torch's extension
# module, which imports setuptools: 0.26 s of CPU a runner) and the call server, the reference worker's workload
# count (torch's flop formulas: 0.19 s a worker, most of it the triton that module imports, see preload).
LATER_IMPORTS = ("verifier.backends.cpu", "verifier.sandbox.loaders", "verifier.sandbox.serve", "torch.utils.cpp_extension")


def preload() -> None:
    """What the two roles import before their first message, short of anything whose first import
    decides a mode for the process (triton: verifier.backends.triton_modes). Torch's flop counter, which the
    reference worker's workload count uses, imports triton only to recognise triton kernels in a traced
    program (its ``_JITFunction``; a reference is PyTorch and the count reads only the formulas): it is
    imported here with triton unimportable, so it takes its no-triton path and triton stays unimported."""
    import numpy  # noqa: F401
    import torch  # noqa: F401

    for name in (*ROLES, "verifier.backends", "verifier.sandbox.seccomp", "verifier.sandbox.observer",
                 "verifier.sandbox.torch_values", "verifier.sandbox.fp64_reference", "verifier.sandbox.inputs",
                 "verifier.sandbox.values", *LATER_IMPORTS):
        importlib.import_module(name)
    with unimportable(MODE_DECIDED_AT_IMPORT, quiet="torch.utils.flop_counter"):
        importlib.import_module("verifier.sandbox.workload")
    imported = [m for m in MODE_DECIDED_AT_IMPORT if m in sys.modules]
    if imported:
        raise RuntimeError(f"the fork server imported {', '.join(imported)}: its processes could not choose its mode")


@contextlib.contextmanager
def unimportable(names: tuple[str, ...], quiet: str = ""):
    """``import name`` raises ImportError inside (a ``None`` entry in ``sys.modules``), and works again after
    (for any that was not imported before); ``quiet``: a logger whose warnings are not shown meanwhile."""
    blocked = [n for n in names if n not in sys.modules]
    logger = logging.getLogger(quiet) if quiet else None
    level = logger.level if logger else 0
    for name in blocked:
        sys.modules[name] = None  # type: ignore[assignment]
    if logger:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for name in blocked:
            if sys.modules.get(name, 0) is None:
                del sys.modules[name]
        if logger:
            logger.setLevel(level)


def main(argv: list[str]) -> int:
    control = socket.socket(fileno=int(argv[1]))
    monitor = watch_monitor(os.environ.pop(MONITOR_ENV, ""))
    if monitor == -1:
        return ISOLATION_FAILED
    preload()
    # Everything imported so far goes to the collector's permanent generation: a forked process's collections
    # skip it instead of walking torch's hundreds of thousands of objects (and copying every page they lie on
    # to write their counts): a quarter of a runner's CPU, half of a reference worker's, went there before.
    gc.freeze()
    own_path = os.environ.get("PYTHONPATH", "")
    control.send(json.dumps({"ready": os.getpid()}).encode())
    poller = select.poll()
    poller.register(control, select.POLLIN)
    if monitor is not None:
        poller.register(monitor, select.POLLIN)
    while True:
        ready = {fd for fd, _ in poller.poll(1000)}
        _reap()
        if monitor is not None and monitor in ready:
            return 0
        if control.fileno() not in ready:
            continue
        try:
            data, fds, _, _ = socket.recv_fds(control, MAX_REQUEST, MAX_FDS)
        except OSError:
            return 0
        if not data:
            return 0
        pid = os.fork()
        if pid == 0:  # the launcher of one process
            code = ISOLATION_FAILED
            try:
                code = _launch(json.loads(data), fds, control, monitor, own_path)
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(code & 0xFF if code >= 0 else ISOLATION_FAILED)
        for fd in fds:
            os.close(fd)
        pidfd = os.pidfd_open(pid)
        try:
            socket.send_fds(control, [json.dumps({"pid": pid}).encode()], [pidfd])
        except OSError:
            return 0
        finally:
            os.close(pidfd)


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _launch(request: dict, fds: list[int], control: socket.socket, monitor: int | None, own_path: str) -> int:
    """The launcher's part (verifier.sandbox.launcher.main, without the exec)."""
    control.close()
    status_w, log_fd, keep = fds[0], fds[1], fds[2:]
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDWR)
    for target, fd in ((0, devnull), (1, log_fd), (2, log_fd)):
        os.dup2(fd, target)
    for fd in (devnull, log_fd):
        os.close(fd)
    policy = isolation.Policy.from_env(request["policy"])
    try:
        isolation.enter_namespaces(pid=isolation.own_pid_namespace(policy))
        namespaces = ""
    except OSError as exc:
        namespaces = f"no PID and network namespaces here ({exc.strerror or exc})"
    confined_r, confined_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the process itself
        code = ISOLATION_FAILED
        try:
            code = _become(request, policy, keep, confined_w, own_path)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:
            traceback.print_exc()
            code = 1
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass
            os._exit(code & 0xFF)
    os.close(confined_w)
    failure = _read_all(confined_r)
    if failure:
        print(f"sandbox launcher: cannot start {request['module']}: {failure}", file=sys.stderr)
        os.write(status_w, (json.dumps({"pid": 0, "error": failure}) + "\n").encode())
        os.waitpid(pid, 0)
        return ISOLATION_FAILED
    os.write(status_w, (json.dumps({"pid": pid, "namespaces": namespaces}) + "\n").encode())
    for fd in keep:
        os.close(fd)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    code = wait_watching(pid, monitor)
    os.write(status_w, (json.dumps({"exit": code}) + "\n").encode())
    return code if code >= 0 else 0


def _read_all(fd: int) -> str:
    chunks = []
    while chunk := os.read(fd, 4096):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks).decode(errors="replace")


def _become(request: dict, policy: isolation.Policy, keep: list[int], confined_w: int, own_path: str) -> int:
    """The process: every descriptor but its own closed, its directory, environment and signals as a
    fresh ``python -m`` would have them, its uid, its confinement; then the role's ``main``."""
    allowed = {0, 1, 2, confined_w, *keep}
    for name in os.listdir("/proc/self/fd"):
        if int(name) not in allowed:
            try:
                os.close(int(name))
            except OSError:
                pass
    try:
        module = request["module"]
        if module not in ROLES:
            raise ValueError(f"not a role the fork server starts: {module}")
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        for sig, action in ((signal.SIGINT, signal.default_int_handler), (signal.SIGTERM, signal.SIG_DFL),
                            (signal.SIGCHLD, signal.SIG_DFL), (signal.SIGPIPE, signal.SIG_IGN)):
            signal.signal(sig, action)
        _import_path(request["cwd"], own_path, request["env"].get("PYTHONPATH", ""))
        if policy.uid is not None:
            os.setgroups(list(policy.groups))
            os.setregid(policy.gid, policy.gid)
            os.setreuid(policy.uid, policy.uid)
            import ctypes

            ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # as after exec: its own /proc entries are its own
        if os.geteuid() != 0:  # as an exec would: a uid other than 0 keeps no capability (a monitor that is not
            privileges.clear_capabilities()  # root made the namespaces in a user namespace, where it holds all)
        confine(policy)
    except BaseException as exc:
        os.write(confined_w, f"{exc!r}".encode())
        os.close(confined_w)
        return ISOLATION_FAILED
    os.close(confined_w)
    argv = [module, *(_fill(a, keep) for a in request["args"])]
    sys.argv = argv
    return int(importlib.import_module(module).main(argv) or 0)


def _fill(arg: str, keep: list[int]) -> str:
    """``{keep:N}``: the number the process's N-th own descriptor has here."""
    if arg.startswith("{keep:") and arg.endswith("}"):
        return str(keep[int(arg[6:-1])])
    return arg


def _import_path(cwd: str, own_path: str, process_path: str) -> None:
    """sys.path as ``python -m`` in ``cwd`` with the process's PYTHONPATH would have it: the server's
    own entries (its directory, its import links) give way to the process's."""
    drop = {p for p in own_path.split(os.pathsep) if p} | {sys.path[0]}
    rest = [p for p in sys.path if p not in drop]
    sys.path[:] = [cwd, *(p for p in process_path.split(os.pathsep) if p), *rest]
    sys.path_importer_cache.clear()
    importlib.invalidate_caches()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
