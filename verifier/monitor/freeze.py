"""Processes held still while another is timed.

Between its calls a process should be idle, but candidate code can leave a thread behind that spins
only while the candidate is not in ``forward``: it would steal the cores another side is timed on,
and the speedup would grow (an honest relu measured 1.29x this way). In the latency phase only the
side being timed runs: the monitor stops every other with SIGSTOP on its whole thread group (which no
code can catch, block or outlive: a sandbox process cannot leave its process) and continues it for
its own turn; every side is stopped and woken the same way, so none is favoured. A hold starts once
every thread has stopped: each is woken to stop itself, and that work must not fall inside another
side's timed window. A process sleeping in its channel's receive notices nothing: the receive resumes.

SIGSTOP does not stop work inside a system call until the call returns: a process may go on using a
CPU while "stopped". A hold waits until every thread has stopped and says how much CPU the process
used meanwhile, and the monitor reads every stopped process's CPU clock around each turn
(verifier.monitor.ledger): any such use is seen, and the round timed again, or the verdict refused.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from verifier.monitor.ledger import process_cpu_ns


def hold(pid: int) -> int:
    """Stop every thread of ``pid`` and return once they have stopped (or after a short limit): the CPU
    the process used between the signal and its last thread stopping (ns; a process in user space stops
    within microseconds, work inside a system call goes on until the call returns). Nothing happens for
    a process already gone, or for pid 0, a launch that failed: kill(0) would stop the monitor's own
    process group."""
    if pid <= 0:
        return 0
    try:
        os.kill(pid, signal.SIGSTOP)
    except (ProcessLookupError, PermissionError):
        return 0
    before = process_cpu_ns(pid)  # read after the signal: a thread in user space has stopped (or is stopping)
    _wait_until_stopped(pid)
    after = process_cpu_ns(pid)
    return max(0, after - before) if before >= 0 and after >= 0 else 0


SETTLE_S = 0.005  # the longest a continued process is given to go back to sleep before its window


def release(pid: int) -> None:
    if pid <= 0:
        return
    try:
        os.kill(pid, signal.SIGCONT)
    except (ProcessLookupError, PermissionError):
        pass


def settle(pid: int, limit_s: float = SETTLE_S) -> None:
    """After :func:`release`: until every thread of ``pid`` has gone back to sleep (or ``limit_s``). A
    continue wakes every stopped thread, the idle ones too (a BLAS pool, an OpenMP worker past its spin),
    and each needs a CPU for a few microseconds to wait again. A window started at once finds them
    runnable behind its own compute threads: they wait for a CPU through the whole window, which reads
    as a window preempted by other work (4-8 ms of a 7 ms ReLU window, a quiet machine), and take their
    microseconds from inside it. A thread that keeps running (spinning) only costs the limit."""
    _wait_while(pid, lambda state: state in ("R", "T", "t"), limit_s, 0.0001)


@contextmanager
def stopped(pid: int) -> Iterator[None]:
    """``pid``'s every thread stopped inside the block."""
    hold(pid)
    try:
        yield
    finally:
        release(pid)


def _wait_until_stopped(pid: int, limit_s: float = 2.0) -> None:
    """Until every thread of ``pid`` is in the stopped state (or ``limit_s`` passed, or it is gone). Holds
    happen outside timed windows, so waiting costs no figure; on a loaded machine a thread may need a
    while to be scheduled and stop itself. A thread still running when the limit passes is inside a
    system call that ignores the stop: the ledger sees the CPU it goes on using."""
    _wait_while(pid, lambda state: state not in ("T", "t", ""), limit_s, 0.0002)


def _wait_while(pid: int, waiting_in: Callable[[str], bool], limit_s: float, poll_s: float) -> None:
    """Until no thread of ``pid`` is in a state ``waiting_in`` accepts (a gone thread reads ""), or
    ``limit_s`` passed."""
    deadline = time.monotonic() + limit_s
    try:
        waiting = set(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return
    while waiting and time.monotonic() < deadline:
        waiting = {tid for tid in waiting if waiting_in(_state(f"/proc/{pid}/task/{tid}/stat"))}
        if waiting:
            time.sleep(poll_s)


def _state(stat_path: str) -> str:
    try:
        with open(stat_path) as fh:
            return fh.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""  # the thread is gone
