"""The runner held still while the reference is timed.

Between its calls the runner should be idle, but candidate code can leave a thread behind (the thread
watch allows the OpenMP pool's count, and one more thread fits in it) that spins only while the
candidate is not in ``forward``: it steals the cores the reference worker is timed on, and the speedup
grows (an honest relu measured 1.29x this way). The monitor therefore stops the runner's whole thread
group with SIGSTOP (which no code can catch, block or outlive: the runner cannot leave its process)
for each timed reference call and continues it afterwards; it stops the reference worker for each
timed candidate call the same way, so that both sides are stopped and woken alike (waking a process
just before its call makes that call faster: stopping only the runner favoured it by 5-10% A/A). The block starts once every thread has
stopped: each is woken to stop itself, and that work must not fall inside the reference's timed call.
A runner sleeping in its channel's receive notices nothing: the call resumes where it was.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def stopped(pid: int) -> Iterator[None]:
    """``pid``'s every thread stopped inside the block (nothing happens for a process already gone, or
    for pid 0, a launch that failed: kill(0) would stop the monitor's own process group)."""
    if pid <= 0:
        yield
        return
    try:
        os.kill(pid, signal.SIGSTOP)
    except (ProcessLookupError, PermissionError):
        yield
        return
    try:
        _wait_until_stopped(pid)
        yield
    finally:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass


def _wait_until_stopped(pid: int, limit_s: float = 0.01) -> None:
    """Until every thread of ``pid`` is in the stopped state (or ``limit_s`` passed, or it is gone).
    A thread still running when the limit passes (a loaded machine) stops before its next instruction
    of its own: the limit bounds only how much of its stopping may fall inside the timed call."""
    deadline = time.monotonic() + limit_s
    try:
        waiting = set(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return
    while waiting and time.monotonic() < deadline:
        waiting = {tid for tid in waiting if _state(f"/proc/{pid}/task/{tid}/stat") not in ("T", "t", "")}
        if waiting:
            time.sleep(0)


def _state(stat_path: str) -> str:
    try:
        with open(stat_path) as fh:
            return fh.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""  # the thread is gone
