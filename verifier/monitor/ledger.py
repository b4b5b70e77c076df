"""What the operating system says about the processes of a timed window, read by the monitor from
outside them: the one account of where CPU time went that a candidate cannot rewrite.

- CPU time of a whole process (every thread, living or exited): the process's CPU clock, read with
  ``clock_gettime`` on the clock id the kernel derives from its pid (``clock_getcpuclockid``; exact
  to the nanosecond, up to date for a thread on a CPU at the moment of reading). A process that is
  stopped uses none: any CPU it used while another side was timed was taken from that side (work in
  a system call outlives SIGSTOP until the call returns).
- Page faults of a whole process (``/proc/<pid>/stat``): a window that faults fresh pages in is not
  yet in a user's loop's steady state.
- Time spent runnable but waiting for a CPU (the second field of ``/proc/<pid>/task/<tid>/schedstat``,
  summed over the process's threads) and involuntary context switches (``/proc/.../status``): a
  window whose monitor waited for a CPU, or whose threads waited while the side left a CPU unused,
  was preempted by other work on the machine (a thread waiting while its siblings fill every CPU
  waits behind its own process).

Each reading is a few microseconds per thread, taken outside the timed window.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

CPUCLOCK_SCHED = 2  # the kernel's clock id encoding: ((~pid) << 3) | CPUCLOCK_SCHED, whole thread group


def process_cpu_ns(pid: int) -> int:
    """CPU time of every thread of ``pid`` so far (ns); -1 when the process is gone."""
    try:
        return time.clock_gettime_ns(((~pid) << 3) | CPUCLOCK_SCHED)
    except OSError:
        return -1


def _schedstat_wait(path: str) -> int:
    try:
        with open(path, "rb") as fh:
            return int(fh.read().split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def run_queue_wait_ns(pid: int) -> int:
    """Time the threads of ``pid`` spent runnable but waiting for a CPU, summed (ns)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    return sum(_schedstat_wait(f"/proc/{pid}/task/{tid}/schedstat") for tid in tids)


def page_faults(pid: int) -> int:
    """Page faults (minor and major) of every thread of ``pid`` so far (``/proc/<pid>/stat``); 0 when gone.
    A window that faults pages in pays the kernel for fresh memory, which a user's loop in its steady
    state does not (verifier.monitor.timing warms up until windows stop faulting)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return int(fields[7]) + int(fields[9])
    except (OSError, IndexError, ValueError):
        return 0


def own_thread_wait_ns() -> int:
    """The same for the calling thread (the monitor's, which takes the time)."""
    return _schedstat_wait("/proc/thread-self/schedstat")


@dataclass(frozen=True)
class Mark:
    """One reading: the monitor's clock, every side's process CPU time, and the run-queue wait of the
    side in its turn and of the monitor's own thread."""

    at_ns: int
    cpu_ns: tuple[int, ...]
    wait_ns: int  # the side's threads' and the monitor's
    monitor_wait_ns: int = 0  # the monitor's alone


class Ledger:
    """The readings of the sides of one measurement (indexed as their pids)."""

    def __init__(self, pids: Sequence[int]) -> None:
        self.pids = tuple(pids)
        self.cpus = tuple(_cpus(pid) for pid in self.pids)  # the CPUs each side may run on

    def mark(self, turn: int) -> Mark:
        """Everything at once: CPU of every side, waits of side ``turn`` and of the monitor."""
        own = own_thread_wait_ns()
        return Mark(time.perf_counter_ns(), tuple(process_cpu_ns(pid) for pid in self.pids),
                    run_queue_wait_ns(self.pids[turn]) + own, own)


def _cpus(pid: int) -> int:
    try:
        return len(os.sched_getaffinity(pid))
    except OSError:
        return os.cpu_count() or 1


@dataclass(frozen=True)
class TurnAccount:
    """Where the CPU went during one side's turn, in ns."""

    window_cpu_ns: int  # the side's own CPU inside the timed window
    collect_cpu_ns: int  # the side's own CPU while its outputs were collected (untimed)
    stolen_ns: tuple[int, ...]  # per side, CPU used while stopped, window and collect (0 for the side in its turn)
    waited_ns: int  # run-queue wait of the side's threads and of the monitor during the timed window
    collect_ns: int  # the monitor's clock around Collect (work left running after Ran makes it slow)
    stopping_ns: int = 0  # the side's CPU between the stop signal after its turn and its last thread stopped
    collect_waited_ns: int = 0  # run-queue wait of the side's threads and of the monitor during Collect
    monitor_waited_ns: int = 0  # the monitor's own share of ``waited_ns``
    room_ns: int = -1  # CPU the side left unused in its window (its CPUs times the window, less its own CPU); -1: unknown

    @property
    def preempted_ns(self) -> int:
        """How much of the window other work on the machine took: the monitor's waits, and its threads'
        waits up to the CPU the side did not use itself. A thread that waits while the side's own
        threads fill every CPU (a third thread of a two-thread kernel, one left spinning) waited behind
        its own process: that is the kernel's time, not the machine's."""
        side = self.waited_ns - self.monitor_waited_ns
        return self.monitor_waited_ns + (side if self.room_ns < 0 else min(side, self.room_ns))

    @property
    def collect_unexplained_ns(self) -> int:
        """Collect's time not spent waiting for a CPU: the copy itself, and any work left running after
        Ran that it had to wait for (other work on the machine explains the rest)."""
        return max(0, self.collect_ns - self.collect_waited_ns)


def account(turn: int, before_run: Mark, after_run: Mark, after_collect: Mark, stopping_ns: int = 0,
            cpus: int = 0) -> TurnAccount:
    """``cpus``: the CPUs the side may use (0: unknown, every wait of its threads counts as preemption)."""
    own = lambda a, b: max(0, b.cpu_ns[turn] - a.cpu_ns[turn])  # noqa: E731
    stolen = tuple(0 if i == turn or before_run.cpu_ns[i] < 0 or after_collect.cpu_ns[i] < 0
                   else max(0, after_collect.cpu_ns[i] - before_run.cpu_ns[i]) for i in range(len(before_run.cpu_ns)))
    window_cpu = own(before_run, after_run)
    room = max(0, cpus * (after_run.at_ns - before_run.at_ns) - window_cpu) if cpus else -1
    return TurnAccount(window_cpu, own(after_run, after_collect), stolen,
                       max(0, after_run.wait_ns - before_run.wait_ns), after_collect.at_ns - after_run.at_ns,
                       stopping_ns, max(0, after_collect.wait_ns - after_run.wait_ns),
                       max(0, after_run.monitor_wait_ns - before_run.monitor_wait_ns), room)


def can_read(pid: int) -> bool:
    """Whether this machine lets the monitor read ``pid``'s clock and scheduler statistics."""
    return process_cpu_ns(pid) >= 0 and Path(f"/proc/{pid}/task").is_dir()
