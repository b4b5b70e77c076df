"""Run one function in a forked copy of the calling process and bring back its JSON result.

For child-side work that must leave no state behind in the process that goes on: the triton
backend's ahead-of-time compile imports ``triton.language`` in compiled mode, and a process that
has done so can no longer run its standard library (``tl.sum``, ``tl.zeros``...) in the
interpreter (:mod:`verifier.backends.triton_modes`). A fork shares what is already imported (torch),
so it starts in milliseconds, unlike a fresh interpreter. The result travels as JSON, never pickle:
the forked side has imported candidate code.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable

_CHUNK = 1 << 16


@dataclass(frozen=True)
class ForkResult:
    value: Any = None  # what the function returned (JSON types), when it returned
    failure: str = ""  # non-empty: why there is no value (timeout, crash, exception)


def call_forked(fn: Callable[[], Any], timeout_s: float, what: str) -> ForkResult:
    """fn() in a forked process, killed after timeout_s; ``what`` names the work in failures."""
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the forked side: never returns into the caller's frames
        os.close(read_fd)
        _run_and_exit(fn, write_fd)
    os.close(write_fd)
    try:
        payload, timed_out = _read_all(read_fd, time.monotonic() + timeout_s)
    finally:
        os.close(read_fd)
    if timed_out:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if timed_out:
        return ForkResult(failure=f"{what} timed out after {timeout_s:g} s")
    if os.WIFSIGNALED(status):
        return ForkResult(failure=f"{what} died with {signal.Signals(os.WTERMSIG(status)).name}")
    try:
        answer = json.loads(payload)
    except ValueError:
        return ForkResult(failure=f"{what} exited with status {os.waitstatus_to_exitcode(status)} and no result")
    if "error" in answer:
        return ForkResult(failure=f"{what} raised:\n{answer['error']}")
    return ForkResult(value=answer["value"])


def _run_and_exit(fn: Callable[[], Any], write_fd: int) -> None:
    code = 1
    try:
        try:
            payload = json.dumps({"value": fn()})
        except BaseException:  # noqa: BLE001 - reported to the caller, whatever it was
            payload = json.dumps({"error": traceback.format_exc(limit=-4)})
        with os.fdopen(write_fd, "w") as out:
            out.write(payload)
        code = 0
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _read_all(fd: int, deadline: float) -> tuple[bytes, bool]:
    """Everything written to fd until EOF, and whether the deadline passed first."""
    chunks = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return b"".join(chunks), True
        chunk = os.read(fd, _CHUNK)
        if not chunk:
            return b"".join(chunks), False
        chunks.append(chunk)
