"""The timed process and the monitor's clock first in line for a CPU during the latency phase.

On a loaded machine (other campaigns, a build, a browser) a timed call shares its cores with whatever
else is runnable, and the scheduler's time slices (milliseconds) land inside timed windows at random:
one side looks slower for reasons that are not its code. So, for the latency phase:

- the side in its turn runs at the highest normal priority (nice -20 on every thread) for that turn
  only, and back at 0 after it. Where the kernel groups processes by session for fairness
  (``/proc/sys/kernel/sched_autogroup_enabled``, on by default in most distributions) a thread's nice
  value only orders it within its session and every busy session gets an equal share, so the side's
  session group is raised too (``/proc/<pid>/autogroup``: each sandbox process is a session of its
  own). Other work then gets about 1% of a core the side wants; what it still takes is seen in the
  run-queue waits (verifier.monitor.ledger) and the window is timed again.
- the monitor's thread takes the time under SCHED_FIFO (real-time, the lowest priority) while it waits
  for the window to end, so it reads its clock the moment the answer arrives, however busy the cores
  are; it is back to normal scheduling before it does anything else. It sleeps throughout, so it takes
  nothing from the timed side.

Both sides get the same treatment, one at a time (the others are stopped, verifier.monitor.freeze), so
neither is favoured. Raising priority needs CAP_SYS_NICE (root has it), or RLIMIT_NICE/RLIMIT_RTPRIO
limits that allow it; where it is refused the phase runs at normal priority and the verdict says so.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

BOOSTED_NICE = -20  # weight 88761 against 1024 at nice 0: a competing process gets ~1% of a shared core


class Boost:
    """``with Boost() as boost:`` then, around each turn, ``boost.raise_(pid)`` / ``boost.lower(pid)``,
    and ``with boost.clock():`` around the wait for a timed window's answer."""

    def __init__(self, nice: int = BOOSTED_NICE) -> None:
        self.nice = nice
        self.granted = False
        self.realtime = False
        self.reason = ""

    def __enter__(self) -> "Boost":
        try:
            with self._fifo():
                pass
            self.realtime = True
        except OSError:
            pass
        tid = threading.get_native_id()
        try:  # may a nice value be lowered here at all? (tried on this thread, then put back)
            before = os.getpriority(os.PRIO_PROCESS, tid)
            os.setpriority(os.PRIO_PROCESS, tid, self.nice)
            os.setpriority(os.PRIO_PROCESS, tid, before)
            self.granted = True
        except OSError as exc:
            self.reason = f"timed at normal priority: raising it was refused ({exc.strerror or exc})"
        return self

    def raise_(self, pid: int) -> None:
        """Every current thread of ``pid``, and its session group, at the raised priority; its threads
        placed (:func:`spread`)."""
        if self.granted:
            _set_all(pid, self.nice)
        spread(pid)

    def lower(self, pid: int) -> None:
        if self.granted:
            _set_all(pid, 0)
        spread(pid, keep=False)

    @contextmanager
    def clock(self) -> Iterator[None]:
        """The calling (monitor) thread real-time inside the block, where allowed."""
        if not self.realtime:
            yield
            return
        with self._fifo():
            yield

    @contextmanager
    def _fifo(self) -> Iterator[None]:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
        try:
            yield
        finally:
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))

    def __exit__(self, *exc) -> None:
        pass


_allowed: dict[int, list[int]] = {}  # each process's CPUs before it was first placed


def spread(pid: int, keep: bool = True) -> None:
    """During its turn, the process's main thread on one of its CPUs and its other threads (the OpenMP
    workers) on the others. Continued after a stop, its threads wake on the CPU that woke them, and the
    kernel's balancer moves one to an idle CPU only at its next tick: on this 2-core machine a GELU
    window's two threads shared one core for 4-6 ms while the other idled, and a 2.2 ms call read 3-8 ms.
    ``keep=False`` gives every thread the process's CPUs back."""
    try:
        cpus = _allowed.setdefault(pid, sorted(os.sched_getaffinity(pid)))  # as launched (verifier.sandbox.launcher)
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except (OSError, ValueError):
        return
    main, rest = ({cpus[0]}, set(cpus[1:])) if keep and len(cpus) > 1 else (set(cpus), set(cpus))
    for tid in tids:
        try:
            os.sched_setaffinity(tid, main if tid == pid else rest)
        except OSError:
            pass  # a thread that just ended
    if not keep:
        _allowed.pop(pid, None)


def _set_all(pid: int, nice: int) -> None:
    if pid <= 0:
        return
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return
    for tid in tids:
        try:
            os.setpriority(os.PRIO_PROCESS, int(tid), nice)
        except (OSError, ValueError):
            pass  # a thread that just ended
    try:
        with open(f"/proc/{pid}/autogroup", "w") as fh:
            fh.write(str(nice))
    except OSError:
        pass  # no session groups here: the threads' own nice values still apply
