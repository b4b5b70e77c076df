"""The operating system's account of a turn (verifier.monitor.ledger), read from outside real
processes: a stopped process uses no CPU, and one inside a system call that runs on after the stop
signal shows how much it used before it stood still (verifier.monitor.freeze.hold); a process that waits for a CPU shows the wait. And the rule that turns the account into "this
round does not count" (verifier.monitor.rounds.disturbance)."""

from __future__ import annotations

import subprocess
import sys
import time

from verifier.monitor.freeze import hold, release
from verifier.monitor.ledger import Mark, TurnAccount, account, process_cpu_ns, run_queue_wait_ns
from verifier.monitor.peers import Answer
from verifier.monitor.rounds import PREEMPTED_FLOOR_NS, STOLEN_NS, STOPPING_NS, Turn, disturbance

SPIN = "import threading\ndef spin():\n    while True: pass\nthreading.Thread(target=spin, daemon=True).start()\nspin()\n"
# A thread that keeps a core busy inside one system call: faulting in 1 GiB of fresh pages with
# MADV_POPULATE_WRITE, which checks only for fatal signals, so SIGSTOP waits until the call returns.
POPULATE = """
import ctypes, mmap, os
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
print("ready", flush=True)
while True:
    size = 1 << 30
    addr = libc.mmap(None, size, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
    libc.madvise(ctypes.c_void_p(addr), ctypes.c_size_t(size), 23)  # MADV_POPULATE_WRITE
    libc.munmap(ctypes.c_void_p(addr), ctypes.c_size_t(size))
"""


def _run(code: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)


def test_a_stopped_process_uses_no_cpu_and_a_running_one_does():
    proc = _run(SPIN)
    try:
        time.sleep(0.3)
        hold(proc.pid)
        before = process_cpu_ns(proc.pid)
        time.sleep(0.3)
        assert process_cpu_ns(proc.pid) == before  # to the nanosecond, every thread
        release(proc.pid)
        time.sleep(0.3)
        assert process_cpu_ns(proc.pid) - before > 10_000_000  # running again (two threads; the machine may be busy)
    finally:
        proc.kill()
        proc.wait()
    assert process_cpu_ns(proc.pid) == -1  # gone: no reading, not an error


def test_work_inside_a_system_call_outlives_the_stop_and_is_seen():
    proc = _run(POPULATE)
    try:
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.2)
        stopping = [hold(proc.pid)]
        for _ in range(4):  # each populate call runs on after the stop signal until it returns
            release(proc.pid)
            time.sleep(0.05)
            stopping.append(hold(proc.pid))
        release(proc.pid)
        assert max(stopping) > STOPPING_NS, stopping  # told to stop, and still burning a core in the kernel
    finally:
        proc.kill()
        proc.wait()


def test_a_process_kept_from_a_cpu_shows_the_wait():
    spinners = [_run(SPIN) for _ in range(2)]  # four busy threads on this machine's cores
    try:
        time.sleep(0.2)
        before = run_queue_wait_ns(spinners[0].pid)
        time.sleep(0.5)
        assert run_queue_wait_ns(spinners[0].pid) - before > 10_000_000
    finally:
        for proc in spinners:
            proc.kill()
            proc.wait()


def _turn(side: int, window_ns: int, waited_ns: int = 0, stolen: tuple[int, ...] = (0, 0), stopping: int = 0) -> Turn:
    answer = Answer(((),), ((),), window_ns, 1)
    return Turn(side, answer, TurnAccount(window_ns, 0, stolen, waited_ns, 0, stopping))


class _Side:
    def __init__(self, name: str, trusted: bool) -> None:
        self.name, self.trusted = name, trusted


SIDES = [_Side("reference", True), _Side("candidate", False)]


def test_a_round_counts_unless_a_window_waited_or_a_stopped_side_ran():
    assert disturbance([_turn(0, 10_000_000, 100_000), _turn(1, 10_000_000)], SIDES) == ("", "")
    why, kind = disturbance([_turn(0, 10_000_000, 3_000_000), _turn(1, 10_000_000)], SIDES)
    assert kind == "machine" and why.startswith("reference's window waited 3.00 ms for a CPU")
    assert disturbance([_turn(0, 1_000_000, PREEMPTED_FLOOR_NS - 1), _turn(1, 1_000_000)], SIDES) == ("", "")
    why, kind = disturbance([_turn(0, 10_000_000, stolen=(0, 5_000_000)), _turn(1, 10_000_000)], SIDES)
    assert kind == "steal" and why == "candidate used 5.00 ms of CPU while stopped, during reference's turn"
    assert disturbance([_turn(1, 10_000_000, stolen=(900_000, 0)), _turn(0, 10_000_000)], SIDES)[1] == "machine"
    why, kind = disturbance([_turn(0, 10_000_000), _turn(1, 10_000_000, stopping=40_000_000)], SIDES)
    assert kind == "steal" and why == "candidate went on using 40.00 ms of CPU after it was stopped"
    assert disturbance([_turn(0, 10_000_000), _turn(1, 10_000_000, stopping=STOPPING_NS // 2)], SIDES) == ("", "")
    # the reference slow to stop (a loaded machine) in the same round does not hide the candidate's steal
    why, kind = disturbance([_turn(0, 10_000_000, stopping=30_000_000),
                             _turn(1, 10_000_000, stopping=40_000_000)], SIDES)
    assert kind == "steal" and why.startswith("candidate went on using 40.00 ms")
    why, kind = disturbance([_turn(0, 10_000_000, stopping=30_000_000, stolen=(0, 900_000)),
                             _turn(1, 10_000_000)], SIDES)
    assert kind == "steal" and why.startswith("candidate used 0.90 ms of CPU while stopped")


def test_an_account_splits_the_turn_at_its_marks():
    marks = [Mark(1, (110, 50), 5), Mark(2, (900, 50), 300), Mark(3, (950, 60), 300)]
    got = account(0, *marks, stopping_ns=7)
    assert (got.window_cpu_ns, got.collect_cpu_ns, got.stolen_ns, got.waited_ns, got.collect_ns,
            got.stopping_ns) == (790, 50, (0, 10), 295, 1, 7)


def test_a_thread_waiting_behind_its_own_siblings_is_not_preemption():
    """Two CPUs, a 10 ms window: a side whose threads used both CPUs throughout waited only behind its own
    threads (a third thread of a two-thread kernel); one that used 16 ms of the 20 left 4 ms to other work."""
    ms = 1_000_000

    def window(cpu_ms: float, side_wait_ms: float, monitor_wait_ms: float = 0.0):
        before = Mark(0, (0, 0), 0, 0)
        after_run = Mark(10 * ms, (int(cpu_ms * ms), 0), int((side_wait_ms + monitor_wait_ms) * ms),
                         int(monitor_wait_ms * ms))
        return account(0, before, after_run, Mark(11 * ms, (int(cpu_ms * ms), 0), after_run.wait_ns,
                                                  after_run.monitor_wait_ns), cpus=2)

    assert window(20, 4).preempted_ns == 0
    assert window(16, 6).preempted_ns == 4 * ms
    assert window(16, 2).preempted_ns == 2 * ms
    assert window(20, 4, monitor_wait_ms=1).preempted_ns == 1 * ms  # the monitor's own waits always count
    assert account(0, Mark(0, (0, 0), 0), Mark(10 * ms, (20 * ms, 0), 4 * ms), Mark(11 * ms, (20 * ms, 0), 4 * ms)
                   ).preempted_ns == 4 * ms  # CPUs unknown: every wait counts
