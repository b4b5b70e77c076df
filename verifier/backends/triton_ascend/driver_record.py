"""The sandboxed fork that records the candidate's launches (toolchain side): plumbing only.

Runs in a child forked by :mod:`driver` inside the triton-ascend environment, under the sandbox's
seccomp filter (no exec, no fork, no sockets): only here does candidate code run. The child imports
the candidate with triton-ascend's ``triton`` (the recording stand-in driver installed first, so
``@triton.autotune`` finds no device) and hands ``ModelNew`` with the task's shape-only input specs
(made by the verifier from the task on the meta device: :mod:`kernelbench_npu.shape_specs`) to
:func:`shape_record.record_launches`, which never allocates the task's inputs.

Each launch goes back to the parent as one JSON line as soon as it is recorded (a child that dies
later loses nothing), then one ``error`` or ``done`` line. The parent compiles the TTIR without ever
importing the candidate.
"""

from __future__ import annotations

import importlib.util
import json
import os
import select
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from shape_record import candidate_frames, install_no_device, record_launches  # noqa: E402 (a sibling module)


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def record(workdir: Path, request: dict, write) -> None:
    """The forked child's whole job; every outcome is written as JSON lines, never raised."""
    install_no_device(request["soc"])
    sys.path.insert(0, str(workdir))
    try:
        candidate = _load(workdir / "candidate.py", "candidate")
        model_new = candidate.ModelNew
    except BaseException as exc:  # noqa: BLE001 - the candidate's failure is the result
        write({"kind": "error", "stage": "importing the candidate", "text": candidate_frames(exc), "launches": 0})
        return
    specs = request["specs"]
    result = record_launches(model_new, specs["init"], specs["inputs"], soc=request["soc"],
                             dtype=request.get("dtype", "float32"), max_configs=int(request.get("max_configs", 8)),
                             seed=int(request.get("seed", 0)), on_launch=write)
    if result["error"] is not None:
        write({"kind": "error", **result["error"]})
        return
    write({"kind": "done", "launches": result["launched"], "placement": result["placement"]})


def run_forked(workdir: Path, request: dict, seccomp_path: str, job=None) -> tuple[list[dict], str]:
    """Fork, sandbox and record (``job``, default :func:`record`); returns the child's JSON lines and,
    if it died, why."""
    job = job or record
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never returns
        os.close(read_fd)
        out = os.fdopen(write_fd, "w", buffering=1)
        code = 0
        try:
            if seccomp_path:
                _load(Path(seccomp_path), "evokernel_seccomp").install("runner")
            job(workdir, request, lambda entry: out.write(json.dumps(entry, default=repr) + "\n"))
            out.flush()
        except BaseException:  # noqa: BLE001
            code = 3
        os._exit(code)
    os.close(write_fd)
    return _collect(pid, read_fd, float(request.get("record_timeout_s", 120)))


def _collect(pid: int, read_fd: int, timeout_s: float) -> tuple[list[dict], str]:
    chunks, deadline = [], time.monotonic() + timeout_s
    while True:
        ready, _, _ = select.select([read_fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(read_fd)
            return _parse(b"".join(chunks)), f"recording timed out after {timeout_s:.0f} s (an endless loop in forward?)"
        chunk = os.read(read_fd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(read_fd)
    _, status = os.waitpid(pid, 0)
    died = ""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        died = ("the candidate made a forbidden system call (process creation, exec, signals) and was killed"
                if sig == signal.SIGSYS else f"the recording process died with signal {signal.Signals(sig).name}")
    elif os.WEXITSTATUS(status) != 0:
        died = f"the recording process exited with code {os.WEXITSTATUS(status)}"
    return _parse(b"".join(chunks)), died


def _parse(data: bytes) -> list[dict]:
    entries = []
    for line in data.decode(errors="replace").splitlines():
        try:
            entries.append(json.loads(line))
        except ValueError:
            continue  # a torn last line from a killed child
    return entries
