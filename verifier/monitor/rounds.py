"""One round of the paired timing: the same fresh inputs for every side, each side timed in its own
turn while every other side is stopped, and the operating system's account of each turn.

A round: the reference worker draws the round's input sets (one per call of a window) from the secret
seed into its draw arena (an arena of its own that only Draw writes; the monitor reads the sets there)
and is stopped again. Sides whose views are for another layout (a window of a new size) are staged for
it together, each on a CPU of its own, and stopped again. Then, side after side in an
order drawn from the secret seed, the monitor raises the side's priority (verifier.monitor.priority),
writes the inputs into its arena while it is stopped (so every side's inputs were last written by the
monitor, just before its turn: no side starts with them warmer in its cache), continues it, lets its
woken threads go back to sleep (the settle: whatever a candidate computes there, with the inputs in
place, the CPU sampler sees and verifier.monitor.late_work charges to the window), runs one
timed window (verifier.monitor.peers.run: Run, then Collect, which on the CPU only says where the outputs lie)
and stops it again, and the monitor copies the outputs out of the stopped process into its arena
(verifier.monitor.remote_outputs: no code of the side runs on them after the clock; the calls checked in full
whole, every other call's outputs as the runs of elements its comparison reads, at places drawn for the round).
Around each window the ledger (verifier.monitor.ledger) reads every side's CPU clock and the run-queue waits;
the stop after it says how much CPU the side went on using.

What makes a round not count (:func:`disturbance`): a side's timed window during which the monitor
waited for a CPU, or its threads did while the side left a CPU unused (other work on the machine
preempted it: verifier.monitor.ledger), or a side that used CPU while
stopped, or after being told to stop (work in a system call outlives SIGSTOP). Such a round is played
again on fresh inputs (verifier.monitor.timing decides how often, and what repeated stealing means).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from verifier.monitor import copying
from verifier.monitor.freeze import hold, release, settle
from verifier.monitor.ledger import Ledger, TurnAccount, account, page_faults
from verifier.monitor.peers import Answer, PeerFailure, empty, read_described, run, stage, stage_send, stage_wait
from verifier.monitor.priority import Boost
from verifier.monitor.reference import Reference, ReferenceFailed
from verifier.monitor.remote_outputs import Reads, RemoteOutputs, readable
from verifier.sandbox.arena import Arena
from verifier.sandbox.spawn import Sandboxed
from verifier.sandbox.values import layouts_in

STOLEN_NS = 200_000  # CPU a stopped process may show during another side's turn
STOPPING_NS = 20_000_000  # CPU a process may use between the stop signal and standing still: µs in user space,
# up to ~5 ms on a machine at load 30 (the thread the signal went to must be scheduled before the others stop)
PREEMPTED_FLOOR_NS = 500_000  # run-queue wait inside one window that is not yet a disturbance (the kernel's own
# housekeeping preempts a window for 0.2-0.4 ms on a quiet machine) ...
PREEMPTED_SHARE = 0.05  # ... or this share of the window, whichever is larger

@dataclass
class Side:
    """One process timed in the rounds: a candidate's runner, or a reference worker (trusted: whatever
    it does, or fails to do, is the machine's doing)."""

    name: str
    process: Sandboxed
    arena: Arena
    trusted: bool
    deadline_s: float  # one window, at most
    attach: Callable[[Arena], None]  # hand the process a new arena
    after: Callable[[Answer, int], None] = lambda answer, began_ns: None  # a candidate's budget and watch
    outside: object | None = None  # a candidate's OutsideWatch (verifier.monitor.outside): observed rounds

    def pid(self) -> int:
        return self.process.pid()


@dataclass(frozen=True)
class Layout:
    """Where a window's input sets and outputs lie in every side's arena."""

    calls: int
    in_stride: int  # bytes per input set (set k starts at k * in_stride)
    out_start: int  # where the outputs begin (after the last input set)


@dataclass(frozen=True)
class Turn:
    side: int
    answer: Answer
    account: TurnAccount
    observed: str | None = None  # an observed window: "" or what the outside samples showed (never counted)
    empty_ns: int = 0  # the record side's (side 0's) empty window after its own, the protocol's fixed cost
    faults: int = 0  # pages the side's process faulted in during its turn (fresh memory: not yet steady)
    settle_work_ns: int = 0  # a candidate's CPU in its own code (or torch's compute) between its continue and its clock

    @property
    def ms_per_call(self) -> float:
        """The window's time per call, its fixed cost included (sizing windows: an upper bound)."""
        return self.answer.ns / max(1, self.answer.calls) / 1e6

    def ms_per_call_less(self, fixed_ns: float) -> float:
        """The window's time per call, less ``fixed_ns`` (what an empty window costs: every window pays
        it once whatever it holds), never below a tenth of the window's own."""
        return max(self.answer.ns - fixed_ns, self.answer.ns / 10) / max(1, self.answer.calls) / 1e6


@dataclass
class Spent:
    """Wall-clock seconds the rounds spent, by what they did (verifier.result.LatencyTime)."""

    windows: float = 0.0
    drawing: float = 0.0
    staging: float = 0.0  # a turn's time outside its window, of which:
    inputs: float = 0.0  # the inputs written into the side's arena
    outputs: float = 0.0  # its window's outputs read out of it
    stage: float = 0.0  # its Stage commands
    settle: float = 0.0  # its threads going back to sleep after the continue
    checking: float = 0.0
    played: int = 0  # rounds played, every kind: calibration, warm-up, observed, counted, retimed

    @contextmanager
    def timed(self, part: str) -> Iterator[None]:
        """The wall clock of the block added to ``part`` (one of the staging parts)."""
        started = time.perf_counter()
        try:
            yield
        finally:
            setattr(self, part, getattr(self, part) + time.perf_counter() - started)


class Rounds:
    def __init__(self, sides: list[Side], drawer: Reference, layout: Layout, boost: Boost, machine_s: float,
                 spent: Spent | None = None, owned: list[Arena] | None = None, most: int = 0,
                 picks: np.random.Generator | None = None) -> None:
        """``owned``: where the draw arena goes for the verification to close; ``most``: the calls a window
        may grow to (the draw arena is made for them once); ``picks``: where the runs of the outputs read as
        runs lie (verifier.monitor.remote_outputs.Reads), drawn from the secret seed."""
        self.sides, self.drawer, self.layout, self.boost, self.machine_s = sides, drawer, layout, boost, machine_s
        self.picks = picks if picks is not None else np.random.default_rng()
        self.spent = spent if spent is not None else Spent()
        self.ledger = Ledger([side.pid() for side in sides])
        self.staged: dict[int, list[list]] = {}  # per side, the layout its views were staged for
        self.owned = owned if owned is not None else []
        self.most = max(most, layout.calls)
        self._draws: Arena | None = None  # the drawer's draw arena: the round's sets are read there, not copied
        self.inputs = np.empty(0, np.uint8)  # the round's input sets, as drawn (a view of the draw arena)
        self.draw_ms: list[float] = []  # per round played, what drawing one input set took (wall clock)
        self._specs: list[list] | None = None  # the last round's input sets (their layouts in the arena)
        self.remote: dict[int, RemoteOutputs] | None = None  # per side, its outputs read by the monitor (None:
        # not decided yet; empty: the peers copy their own, the monitor cannot read their memory)

    def hold_all(self) -> None:
        for side in self.sides:
            hold(side.pid())

    def release_all(self) -> None:
        for side in self.sides:
            release(side.pid())

    def play(self, items: list[tuple[int, bool]], order: list[int], device: bool = False,
             observe: bool = False, check: Callable[[list[Turn]], None] = lambda turns: None,
             again: bool = False, whole: frozenset[int] = frozenset()) -> list[Turn]:
        """One round on the input sets ``items`` (``(index, timing)`` as Draw takes them), the sides in
        ``order``; every side is stopped before and after. ``observe``: every candidate's window is
        sampled from outside (verifier.monitor.outside), so the round's times are not counted. ``check``
        sees the turns with their outputs (views of the arenas, read while every side is stopped; the
        calls in ``whole`` read whole, every other call's outputs as runs of elements where the monitor reads
        them itself); the turns returned have none. ``again``: the previous round's input sets once more,
        where there are as many (an untimed warm-up round: drawing costs more than many a kernel's window)."""
        specs = self._specs if again and self.can_replay(len(items)) else self.draw(items)
        self.spent.played += 1
        self._specs = specs
        reads = Reads.drawn(len(items), whole, self.picks)  # the round's: the same for every side
        if not device:
            self._stage_together([i for i in order if self.staged.get(i) != specs], specs)
        turns = [self.turn(i, specs, device, observe, reads) for i in order]
        started = time.perf_counter()
        try:
            check(turns)
        finally:
            turns = [replace(t, answer=t.answer.settled()) for t in turns]
            self.spent.checking += time.perf_counter() - started
        return turns

    def can_replay(self, calls: int) -> bool:
        """Whether the last round's inputs fill a window of ``calls`` calls."""
        return self._specs is not None and len(self._specs) == calls

    def draw(self, items: list[tuple[int, bool]]) -> list[list]:
        """The round's input sets drawn into the drawer's draw arena, an arena of their own that only Draw
        writes (the monitor reads them there, kept for the round: every side's turn starts from them; a copy
        of 100 MB a ReLU round, 9 ms, before it had one)."""
        stride, pid = self.layout.in_stride, self.drawer.process.pid()
        size = len(items) * stride
        started = time.perf_counter()
        self.inputs = np.empty(0, np.uint8)  # no view of an arena about to be written or replaced
        draws = self._draw_arena(size)
        release(pid)
        try:
            specs = self.drawer.draw([(index, timing, k * stride) for k, (index, timing) in enumerate(items)],
                                     time.monotonic() + self.machine_s, draws=True)
        finally:
            hold(pid)
        self.draw_ms.append((time.perf_counter() - started) * 1e3 / max(1, len(items)))
        for k, spec in enumerate(specs):
            ends = [lay.offset + lay.span() for lay in layouts_in(spec, draws.size)]
            if ends and max(ends) > (k + 1) * stride:
                raise ReferenceFailed(f"input set {k} ({max(ends) - k * stride} bytes) is larger than the "
                                      f"{stride} bytes the task's trials needed")
        self.inputs = np.frombuffer(draws.map, np.uint8, size)
        self.spent.drawing += time.perf_counter() - started
        return specs

    def _draw_arena(self, size: int) -> Arena:
        """The draw arena, made (for windows of ``most`` calls) and handed to the drawer on the first draw."""
        if self._draws is None or self._draws.size < size:
            arena = Arena.create(max(size, self.most * self.layout.in_stride))
            self.owned.append(arena)
            self.drawer.attach_draws(arena)
            self._draws = arena
        return self._draws

    def turn(self, i: int, specs: list[list], device: bool, observe: bool = False, reads: Reads | None = None) -> Turn:
        """Side ``i``'s window on the round's inputs. On the CPU the inputs are written while the side is
        stopped and it is continued only to run (its views of the arena are staged once per layout). Between
        the continue and the clock lies the settle (verifier.monitor.freeze.settle, at most 5 ms): the runner may
        not set a SIGCONT handler to use it (its seccomp filter), but a thread of its own that is awake then
        could, so a candidate's settle is recorded by its CPU sampler (outside an observed round, whose whole
        turn is) and the CPU it used there outside libgomp's spin is the turn's ``settle_work_ns``. A device copies the
        inputs in Stage, before each window."""
        side, pid = self.sides[i], self.sides[i].pid()
        turn_started, window_s = time.perf_counter(), 0.0
        deadline, during = time.monotonic() + side.deadline_s, f"{side.name}'s timing"
        self.boost.raise_(pid)
        outside, stopping, fixed = side.outside if observe else None, None, 0
        recorder = side.outside if side.outside is not None and not observe and not device else None
        try:
            if not device and self.staged.get(i) != specs:
                self._restage(side, specs, deadline, during)
            with self.spent.timed("inputs"):
                copying.copy(np.frombuffer(side.arena.map, np.uint8, self.inputs.size), self.inputs)
            faulted = page_faults(pid)
            with outside.watching() if outside is not None else nullcontext() as watched:
                with recorder.recording() if recorder is not None else nullcontext() as settling:
                    release(pid)
                    if device:
                        with self.spent.timed("stage"):
                            self._stage(side, specs, deadline, during)
                    with self.spent.timed("settle"):
                        settle(pid)
                began = time.monotonic_ns()
                answer = self._run(side, len(specs), deadline, during, lambda: self.ledger.mark(i), device)
                if i == 0:
                    fixed = self._empty(side, deadline, during)
                window_s = (time.monotonic_ns() - began) / 1e9
                stopping = hold(pid)
                faulted = page_faults(pid) - faulted
                if answer.described is not None:
                    with self.spent.timed("outputs"):
                        answer = self._read_described(side, answer, during, reads)
        finally:
            if stopping is None:  # a failure: stopped all the same
                hold(pid)
            self.boost.lower(pid)
            self.spent.windows += window_s
            self.spent.staging += time.perf_counter() - turn_started - window_s
        side.after(answer, began)
        seen = outside.after_call(watched.samples, f"{during}, a window of {len(specs)} calls", timed=True) \
            if outside else None
        settled = recorder.work_ns(settling) if recorder is not None else 0
        return Turn(i, answer, account(i, *answer.marks, stopping, self.ledger.cpus[i]), seen, fixed, faulted, settled)

    def _restage(self, side: Side, specs: list[list], deadline: float, during: str) -> None:
        """A stopped side's views staged for a new layout: continued for its Stage, then stopped again."""
        release(side.pid())
        with self.spent.timed("stage"):
            self._stage(side, specs, deadline, during)
        hold(side.pid())

    def _stage_together(self, due: list[int], specs: list[list]) -> None:
        """The stopped sides ``due`` staged for a new layout at once, each on a CPU of its own (the Stage before
        a window of more calls than any before grows the side's heap: 0.1-0.2 s a side, one CPU each), then
        stopped again, before any side's turn. Every side that was asked is waited for (its channel stays in
        step) before the first failure is raised."""
        if len(due) < 2:
            return  # one side restages in its turn
        started = time.perf_counter()
        asked: list[int] = []
        failures: list[Exception] = []
        for i in due:
            release(self.sides[i].pid())
        try:
            for i in due:
                side = self.sides[i]
                if self._went_through(side, lambda: stage_send(side.process, specs, f"{side.name}'s timing"), failures):
                    asked.append(i)
            for i in asked:
                side, deadline = self.sides[i], time.monotonic() + self.sides[i].deadline_s
                if self._went_through(side, lambda: stage_wait(side.process, deadline, f"{side.name}'s timing"), failures):
                    self.staged[i] = specs
        finally:
            for i in due:
                hold(self.sides[i].pid())
            elapsed = time.perf_counter() - started
            self.spent.stage += elapsed
            self.spent.staging += elapsed
        if failures:
            raise failures[0]

    @staticmethod
    def _went_through(side: Side, step: Callable[[], None], failures: list[Exception]) -> bool:
        """Whether ``step`` for ``side`` went through; if not, its PeerFailure (the machine's where the side is
        trusted) is added to ``failures``."""
        try:
            step()
            return True
        except PeerFailure as failure:
            failures.append(_machine(side, failure) if side.trusted else failure)
            return False

    def _stage(self, side: Side, specs: list[list], deadline: float, during: str) -> None:
        try:
            stage(side.process, specs, deadline, during)
        except PeerFailure as failure:
            raise _machine(side, failure) if side.trusted else failure from None
        self.staged[self.sides.index(side)] = specs

    def _empty(self, side: Side, deadline: float, during: str) -> int:
        try:
            return empty(side.process, deadline, during, self.boost.clock)
        except PeerFailure as failure:
            raise _machine(side, failure) if side.trusted else failure from None

    def _run(self, side: Side, calls: int, deadline: float, during: str, mark, device: bool) -> Answer:
        try:
            return run(side.process, side.arena, calls, self.layout.out_start, deadline, during, mark, self.boost.clock,
                       borrow=True, describe=not device and bool(self._remote()))
        except PeerFailure as failure:
            raise _machine(side, failure) if side.trusted else failure from None

    def _remote(self) -> dict[int, RemoteOutputs]:
        """Per side, the reader of its outputs; empty where the monitor cannot read every side's memory (then
        every side copies its own, so that both pay the same)."""
        if self.remote is None:
            pids = [side.pid() for side in self.sides]
            self.remote = {i: RemoteOutputs(pid) for i, pid in enumerate(pids)} if all(map(readable, pids)) else {}
        return self.remote

    def _read_described(self, side: Side, answer: Answer, during: str, reads: Reads | None) -> Answer:
        """The window's outputs read out of the stopped side's memory into its arena (verifier.monitor.remote_outputs;
        ``reads``: what of each call)."""
        try:
            return read_described(self._remote()[self.sides.index(side)], answer, side.arena, self.layout.out_start,
                                  during, reads)
        except PeerFailure as failure:
            raise _machine(side, failure) if side.trusted else failure from None


def _machine(side: Side, failure: PeerFailure) -> ReferenceFailed:
    return ReferenceFailed(f"{side.name} worker failed: {failure.reason}")


def disturbance(turns: list[Turn], sides: list[Side]) -> tuple[str, str]:
    """("", "") for a round that counts; else (what disturbed it, "steal" when a candidate's process
    used CPU while stopped, "machine" otherwise). A candidate's use of CPU while stopped is named first
    wherever it is seen in the round: a trusted side that did the same in an earlier turn (the machine's
    load delaying its stop) must not hide it."""
    ran: list[tuple[str, str]] = []
    for turn in turns:
        if turn.account.stopping_ns > STOPPING_NS:
            kind = "machine" if sides[turn.side].trusted else "steal"
            ran.append((f"{sides[turn.side].name} went on using {turn.account.stopping_ns / 1e6:.2f} ms of CPU after "
                        "it was stopped", kind))
        for j, stolen in enumerate(turn.account.stolen_ns):
            if stolen > STOLEN_NS:
                kind = "machine" if sides[j].trusted else "steal"
                ran.append((f"{sides[j].name} used {stolen / 1e6:.2f} ms of CPU while stopped, during "
                            f"{sides[turn.side].name}'s turn", kind))
    if ran:
        return next((found for found in ran if found[1] == "steal"), ran[0])
    for turn in turns:
        limit = max(PREEMPTED_FLOOR_NS, PREEMPTED_SHARE * turn.answer.ns)
        if turn.account.preempted_ns > limit:
            return (f"{sides[turn.side].name}'s window waited {turn.account.preempted_ns / 1e6:.2f} ms for a CPU "
                    f"other work held ({turn.answer.ns / 1e6:.2f} ms window)", "machine")
    return "", ""
