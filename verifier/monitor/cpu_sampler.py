"""Where a process's CPU time goes during one call, observed from outside it (DESIGN.md §4, "Observation
from outside").

:class:`CpuSampler` opens the kernel's CPU-clock sampler on every thread of a process (verifier.monitor.
perf_events; opened while the process is stopped, inherited by every thread created later) and maps each
sampled instruction address to the object it lies in (verifier.monitor.code_map) and, inside torch's
libraries, to the function (verifier.monitor.torch_glue). ``with sampler.watching() as window: call()``
gives ``window.samples``: a :class:`CallSamples` of what ran during the block, counted per object and
kind, the threads that existed during it (from the kernel's records of thread creation and exit) and the
CPU time its threads used (``/proc/<pid>/task/*/schedstat``).

Usable around any peer call (the correctness calls; the latency phase's timed windows, on both sides, so
that the sampler's own cost falls on both alike).
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from verifier.monitor import perf_events, torch_glue
from verifier.monitor.code_map import FOREIGN, KERNEL, OWN, RUNTIME, TORCH, CodeMap
from verifier.monitor.freeze import stopped
from verifier.monitor.genuine_code import PAGE, GenuinePages

# A sample every 100 us of a thread's CPU time. Each sample costs the sampled thread about 20-40 us of CPU on
# this machine (a virtual machine: the timer's interrupt exits to the hypervisor), so the watched calls run
# about a quarter slower at 100 us, 2% at 1 ms (python -m benchmarks.outside_cost); the calls are not timed.
PERIOD_NS = 100_000
WAITING_RUNTIMES = ("libgomp",)  # where a continued thread's CPU is waiting, not work: an OpenMP team's spin
SPARSE_PERIOD_NS = 1_000_000  # where only threads and the sampling itself are judged (an interpreter's long calls)


@dataclass(frozen=True)
class CallSamples:
    """What the sampler saw during one watched block."""

    samples: int  # samples of the watched process inside the block, every thread
    by_kind: tuple[tuple[str, int], ...]  # (own | runtime | torch | foreign, samples)
    by_object: tuple[tuple[str, int], ...]  # (object's file name, "[kernel]", "[anonymous]"; samples), most first
    own: int  # samples in the candidate's own code (the libraries the monitor built for it, SLEEF)
    torch_compute: int  # samples in torch's compute (torch's libraries outside their glue)
    foreign: int  # samples in code no build of the candidate produced and no runtime library holds
    compute_functions: tuple[tuple[str, int], ...]  # (object:function, samples) of torch's compute and foreign code
    threads: int  # the most threads alive at once during the block
    thread_ids: frozenset[int]  # every thread alive at some point of the block
    cpu_ns: int  # CPU time of the process's threads during the block (schedstat)
    lost: int  # samples the kernel dropped (its ring was full)
    period_ns: int
    cost_ns: int  # the sampler's own time for this block (reading /proc, draining and attributing)
    waiting: int = 0  # samples in an OpenMP runtime's own, unmodified code (a team's spin), when asked for


@dataclass
class Window:
    """The block's result, set when the block ends."""

    samples: CallSamples | None = None


@dataclass
class Block:
    """A recorded block's bounds (the monitor's CLOCK_MONOTONIC, ns); ``end`` is set when it ends."""

    start: int
    end: int = 0


class CpuSampler:
    def __init__(self, pid: int, libs: str, period_ns: int = PERIOD_NS, runtime: tuple[str, ...] = ()) -> None:
        """``libs``: the directory of the libraries the monitor built for the candidate; ``runtime``: more files
        whose code is the verifier's own (the runner's native observer)."""
        self.pid, self.period_ns = pid, period_ns
        self.code = CodeMap(pid, libs, runtime)
        self.pages = GenuinePages(pid)
        self.alive: set[int] = set()  # the process's threads, as the kernel's records of creation and exit say
        self.rings = self._open()

    def _open(self) -> perf_events.Rings:
        cpus = allowed_cpus(self.pid)
        with stopped(self.pid):  # no thread is created between listing the threads and opening their events
            tids = task_ids(self.pid)
            if not tids:
                raise perf_events.PerfUnavailable(0, f"process {self.pid} has no threads to watch")
            rings = perf_events.Rings.open(sorted(tids), cpus, self.period_ns)
        self.alive = set(tids)
        return rings

    @contextmanager
    def watching(self) -> Iterator[Window]:
        """Samples only inside the block: outside it the events are off, so a call not watched (a timed one)
        pays nothing for them."""
        window = Window()
        began = time.perf_counter_ns()
        self.alive = task_ids(self.pid) or self.alive  # who is alive now (creations and exits between blocks)
        before = cpu_ns(self.pid, self.alive)
        start = time.monotonic_ns()
        self.rings.enable(True)
        cost = time.perf_counter_ns() - began
        try:
            yield window
        finally:
            self.rings.enable(False)
            end = time.monotonic_ns()
            began = time.perf_counter_ns()
            used = max(0, cpu_ns(self.pid) - before)
            records = self.rings.drain()
            window.samples = self._attribute(records, start, end, used, cost + time.perf_counter_ns() - began)

    @contextmanager
    def recording(self) -> Iterator[Block]:
        """Samples inside the block, attributed afterwards (:meth:`attribute`): leaving the block only switches the
        events off (an ioctl per event), so what follows it (a timed window) starts at once, with nothing of the
        process left unobserved in between."""
        self.alive = task_ids(self.pid) or self.alive
        block = Block(time.monotonic_ns())
        self.rings.enable(True)
        try:
            yield block
        finally:
            self.rings.enable(False)
            block.end = time.monotonic_ns()

    def attribute(self, block: Block) -> CallSamples:
        """What :meth:`recording` saw in ``block`` (drained now: the events were off since it ended), its
        ``waiting`` counted."""
        began = time.perf_counter_ns()
        records = self.rings.drain()
        return self._attribute(records, block.start, block.end, 0, time.perf_counter_ns() - began, waiting=True)

    def _waiting(self, mapping, ips: np.ndarray) -> int:
        """How many of ``ips`` (in ``mapping``) lie in an OpenMP runtime's own code: a runtime library by its path
        (verifier.monitor.code_map) whose page there still holds the file's bytes (verifier.monitor.genuine_code)."""
        if mapping.kind != RUNTIME or not Path(mapping.path).name.startswith(WAITING_RUNTIMES):
            return 0
        pages, counts = np.unique(ips - ips % PAGE, return_counts=True)
        return int(sum(n for page, n in zip(pages, counts)
                       if self.pages.genuine(mapping.path, mapping.start, mapping.offset, int(page))))

    def _attribute(self, records: perf_events.Records, start: int, end: int, used_ns: int, cost_ns: int,
                   waiting: bool = False) -> CallSamples:
        samples = records.samples()
        within = (samples["time"] >= start) & (samples["time"] <= end)
        inside = samples[within]
        threads, ids = self._replay_threads(records, inside["tid"], start, end)
        kinds, objects, functions, waited = Counter(), Counter(), Counter(), 0
        in_kernel = (inside["misc"] & perf_events.CPUMODE_MASK) == perf_events.CPUMODE_KERNEL
        if in_kernel.any():
            kinds[RUNTIME] += int(in_kernel.sum())
            objects[KERNEL] += int(in_kernel.sum())
        user = inside["ip"][~in_kernel]
        where = self.code.locate(user)
        if (where < 0).any():
            self.code.refresh()  # a library loaded since the last read
            where = self.code.locate(user)
        for index, count in zip(*np.unique(where, return_counts=True)):
            mapping = self.code.mappings[index] if index >= 0 else None
            kind, label = (mapping.kind, Path(mapping.path).name or "[anonymous]") if mapping else (FOREIGN, "[unmapped]")
            objects[label] += int(count)
            if waiting and mapping is not None:
                waited += self._waiting(mapping, user[where == index])
            if kind == TORCH:
                for function, glue, n in torch_glue.classify_all(mapping, user[where == index]):
                    kinds[RUNTIME if glue else TORCH] += n
                    if not glue:
                        functions[f"{label}:{function}"] += n
                continue
            if kind == FOREIGN:
                functions[label] += int(count)
            kinds[kind] += int(count)
        return CallSamples(int(within.sum()), tuple(sorted(kinds.items())), tuple(objects.most_common()), kinds[OWN],
                           kinds[TORCH], kinds[FOREIGN], tuple(functions.most_common(8)), threads, frozenset(ids), used_ns,
                           records.lost, self.period_ns, cost_ns, waited)

    def _replay_threads(self, records: perf_events.Records, sampled: np.ndarray, start: int,
                        end: int) -> tuple[int, set[int]]:
        """The most threads alive at once within [start, end], and every thread alive in it, from the
        kernel's records of thread creation and exit in time order (the running set carries over)."""
        events = sorted([(t, 1, tid) for t, tid in records.forks] + [(t, -1, tid) for t, tid in records.exits])
        alive = self.alive
        ids: set[int] | None = None
        most = 0
        for when, change, tid in events:
            if when >= start and ids is None:  # the block begins: who is alive then
                ids, most = set(alive), len(alive)
            if change > 0:
                alive.add(tid)
            else:
                alive.discard(tid)
            if ids is not None and when <= end and change > 0:
                ids.add(tid)
                most = max(most, len(alive))
        if ids is None:
            ids, most = set(alive), len(alive)
        ids.update(int(tid) for tid in np.unique(sampled))
        return max(most, 1 if ids else 0), ids

    def set_period(self, period_ns: int) -> None:
        """Sample every ``period_ns`` of CPU time from now on (e.g. sparsely inside timed windows)."""
        self.rings.set_period(period_ns)
        self.period_ns = period_ns

    def close(self) -> None:
        self.rings.close()
        self.pages.close()


def task_ids(pid: int) -> set[int]:
    try:
        return {int(t) for t in os.listdir(f"/proc/{pid}/task")}
    except OSError:
        return set()


def allowed_cpus(pid: int) -> list[int]:
    """The CPUs ``pid`` may run on (its affinity: the runner cannot change it), else every online CPU."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Cpus_allowed_list:"):
                return _cpu_list(line.split(":", 1)[1].strip())
    except OSError:
        pass
    return list(range(os.cpu_count() or 1))


def _cpu_list(text: str) -> list[int]:
    cpus: list[int] = []
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-")
            cpus += range(int(a), int(b) + 1)
        elif part:
            cpus.append(int(part))
    return cpus


def cpu_ns(pid: int, tids: set[int] | None = None) -> int:
    """CPU time of ``pid``'s live threads (schedstat's first field: time on a CPU, in ns)."""
    total = 0
    for tid in task_ids(pid) if tids is None else tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as fh:
                total += int(fh.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total
