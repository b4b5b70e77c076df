"""Lint (and adapt) many tasks with a small pool of worker processes, each handling tasks one after another.

Each worker pays torch's import once (1-3 s) instead of once per task, and a batch of fewer than
:data:`MANY_REQUESTS` tasks gets one worker. A :class:`WorkerPool` keeps the workers of one batch for the
next (a build's sizing, then its lint: each worker started once per build, not once per phase); each
request carries its own memory limit. A task gets a wall-clock
timeout; a worker that hangs or dies (segfault, OOM kill) is killed and replaced, and only the task
it was on is quarantined with the reason. The build never crashes because of a reference.
"""

from __future__ import annotations

import json
import os
import queue
import select
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Callable, Sequence

from kernelbench_npu.child_process import ChildProcess, status_line
from kernelbench_npu.tolerance import tolerances

STARTUP_TIMEOUT_S = 120.0
# Fewer requests than this get one worker: a second one's start-up (the interpreter and torch, ~2 s of
# CPU) costs more than it saves on a build of a few tasks (the test suite's small builds started 70
# workers a run, 200 s of CPU); a build of KernelBench's hundreds keeps every worker.
MANY_REQUESTS = 4


@dataclass(frozen=True)
class LintRequest:
    key: str  # unique per request (the task id)
    source: str  # the problem source at the sizes to lint (or, for "adapt", as written)
    dtype: str
    path: str  # shown in tracebacks, e.g. "problems/L1/019_relu.py"
    kind: str = "lint"  # "lint" | "adapt" (size profile + cost on the meta device, see kernelbench_npu.plan)
    shrink: bool = True  # adapt: the task itself takes the cpu-2core sizes (else it keeps its own)
    lint_profile: str = "cpu-2core"  # adapt: the size profile the reference is linted at (variants.PROFILES)
    specs: bool = False  # adapt: also describe the task's inputs by shape (kernelbench_npu.shape_specs)


@dataclass(frozen=True)
class LintResult:
    key: str
    status: str  # "ok" | "quarantined"
    reason: str | None
    reference_ms: float | None  # median forward at the sizes linted (a measurement)
    atol: float
    rtol: float
    notes: str | None = None  # trivial outputs that pass under some input distributions only


class _Worker:
    """One lint worker process and the pipe it answers on."""

    def __init__(self, threads: int, memory_bytes: int):
        read_fd, write_fd = os.pipe()
        self.stderr = tempfile.TemporaryFile()
        self.child = ChildProcess(
            [sys.executable, "-m", "kernelbench_npu.lint_worker", str(write_fd), str(threads), str(memory_bytes)],
            env=_worker_env(threads), pass_fds=(write_fd,), stdin=subprocess.PIPE, stderr=self.stderr, text=True)
        os.close(write_fd)
        self.reader = os.fdopen(read_fd, "r")
        self.pending = ""

    def read_line(self, timeout_s: float) -> dict | None:
        """The next JSON answer; None on timeout; EOFError when the worker closed its end (died)."""
        deadline = time.monotonic() + timeout_s
        while "\n" not in self.pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([self.reader], [], [], remaining)
            if ready:
                chunk = os.read(self.reader.fileno(), 1 << 16).decode()
                if not chunk:
                    raise EOFError("lint worker closed its pipe")
                self.pending += chunk
        line, self.pending = self.pending.split("\n", 1)
        return json.loads(line)

    def send(self, request: LintRequest, memory_bytes: int) -> None:
        self.child.proc.stdin.write(json.dumps({**request.__dict__, "memory_bytes": memory_bytes}) + "\n")
        self.child.proc.stdin.flush()

    def death_reason(self) -> str:
        code = self.child.poll()
        if code is None:
            return ""
        if code < 0:
            return f"lint worker {status_line(code)}"
        self.stderr.seek(0)
        tail = [ln for ln in self.stderr.read().decode(errors="replace").splitlines() if ln.strip()]
        return f"lint worker {status_line(code)}" + (f": {tail[-1][:200]}" if tail else "")

    def kill(self) -> None:
        self.child.kill(wait_s=None)
        for stream in (self.child.proc.stdin, self.reader, self.stderr):
            try:
                stream.close()
            except OSError:
                pass


def _worker_env(threads: int) -> dict:
    env = dict(os.environ)
    env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads), PYTHONHASHSEED="0")
    return env


class WorkerPool:
    """Idle workers kept between batches (``run_requests(..., pool=...)``), by their torch thread count;
    those still idle when the pool closes are ended."""

    def __init__(self) -> None:
        self._idle: list[tuple[int, _Worker]] = []
        self._lock = threading.Lock()

    def take(self, threads: int) -> "_Worker | None":
        with self._lock:
            for i, (t, worker) in enumerate(self._idle):
                if t == threads:
                    del self._idle[i]
                    return worker
        return None

    def give(self, threads: int, worker: "_Worker") -> None:
        if worker.child.poll() is not None:
            worker.kill()
            return
        with self._lock:
            self._idle.append((threads, worker))

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for _threads, worker in idle:
            worker.kill()

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def run_requests(requests: Sequence[LintRequest], task_timeout_s: float, workers: int = 2, threads: int = 1,
                 memory_bytes: int = 4 << 30, on_answer: Callable[[LintRequest, dict], None] | None = None,
                 pool: WorkerPool | None = None) -> dict[str, dict]:
    """Send every request to the workers; one answer dict per key. A hang, crash or failed start becomes
    ``{"failure": reason}``; an exception inside the worker arrives as ``{"error": text}``. With ``pool``,
    idle workers of an earlier batch serve this one, and this batch's workers are left to the pool."""
    todo: queue.Queue = queue.Queue()
    for request in requests:
        todo.put(request)
    answers: dict[str, dict] = {}
    lock = threading.Lock()

    def run_slot() -> None:
        worker = None
        try:
            while True:
                try:
                    request = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    worker = worker or (pool.take(threads) if pool else None) or _start(threads, memory_bytes)
                    answer, worker = _ask(worker, request, task_timeout_s, memory_bytes)
                except RuntimeError as exc:
                    answer = {"failure": str(exc)}
                with lock:
                    answers[request.key] = answer
                    if on_answer:
                        on_answer(request, answer)
        finally:
            if worker is not None:
                if pool is not None:
                    pool.give(threads, worker)
                else:
                    worker.kill()

    slots = [threading.Thread(target=run_slot, daemon=True) for _ in range(worker_count(workers, len(requests)))]
    for slot in slots:
        slot.start()
    for slot in slots:
        slot.join()
    return answers


def worker_count(workers: int, requests: int) -> int:
    """Worker processes for ``requests`` requests: one below :data:`MANY_REQUESTS`, where a second worker's
    start-up would cost more than it saves, else up to ``workers``."""
    return 1 if requests < MANY_REQUESTS else max(1, min(workers, requests))


def lint_all(requests: Sequence[LintRequest], task_timeout_s: float, workers: int = 2, threads: int = 1,
             memory_bytes: int = 4 << 30, progress: Callable[[str], None] | None = None,
             pool: WorkerPool | None = None) -> dict[str, LintResult]:
    """Lint every request; return one result per key (timeouts and crashes become quarantines)."""
    def report(request: LintRequest, answer: dict) -> None:
        if progress:
            result = _result(request, answer)
            progress(f"lint {request.key}: {result.status}" + (f" ({result.reason})" if result.reason else ""))

    answers = run_requests(requests, task_timeout_s, workers, threads, memory_bytes, report, pool)
    return {r.key: _result(r, answers[r.key]) for r in requests}


def _start(threads: int, memory_bytes: int) -> _Worker:
    worker = _Worker(threads, memory_bytes)
    try:
        ready = worker.read_line(STARTUP_TIMEOUT_S)
    except EOFError:
        worker.child.wait()
        ready = None
    if ready is None:
        reason = worker.death_reason() or "no answer"
        worker.kill()
        raise RuntimeError(f"lint worker failed to start: {reason}")
    return worker


def _ask(worker: _Worker, request: LintRequest, timeout_s: float, memory_bytes: int) -> tuple[dict, _Worker | None]:
    """One request; on a hang or crash the worker is killed and None handed back (restarted lazily)."""
    reason = f"timed out after {timeout_s:g} s (hang or far too slow)"
    try:
        worker.send(request, memory_bytes)
        answer = worker.read_line(timeout_s)
    except (EOFError, OSError):  # the worker died: wait for its exit status to name the cause
        answer, reason = None, "lint worker died"
        worker.child.wait(10)
    if answer is not None:
        return answer, worker
    reason = worker.death_reason() or reason
    worker.kill()
    return {"failure": reason}, None


def _result(request: LintRequest, answer: dict) -> LintResult:
    if "failure" in answer:
        return _failed(request, answer["failure"] if "worker" in answer["failure"] else f"lint {answer['failure']}")
    if "error" in answer:
        return _failed(request, f"reference failed: {answer['error']}")
    return LintResult(request.key, answer["status"], answer["reason"], answer["reference_ms"], answer["atol"],
                      answer["rtol"], answer.get("notes"))


def _failed(request: LintRequest, reason: str) -> LintResult:
    atol, rtol = tolerances(request.dtype, 1.0)
    return LintResult(request.key, "quarantined", reason, None, atol, rtol)
