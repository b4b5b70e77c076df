"""The latency gate, driven and timed by the monitor.

What lies inside a timed window is the kernel's work and as little else as can be: each side (the
candidate's runner, the reference worker) runs a window of ``calls_per_window`` calls back to back on
distinct fresh input sets the monitor staged beforehand, and the monitor's clock brackets only the
command that runs them (verifier.monitor.peers.window). Fixed costs (two pipe messages and a process
wake-up, ~0.33 ms: benchmarks/timing_floor) are spread over a window of at least ``window_ms``; copying outputs out and
checking them happen after the clock stops. The window's size comes from two calibration rounds of
one call each: the fastest call sets how many calls fill ``window_ms`` (bounded by memory; the first
call of a layout alone is cold and read 4x the steady ReLU call, which sized windows at a quarter). Device
backends time one call per window, their cache flushed before it.

Rounds (verifier.monitor.rounds): the same inputs for every side, sides in a seeded order, each timed
while every other side is stopped, at raised scheduling priority. A round whose windows other work on
the machine preempted, or during which a stopped side used CPU, is played again on fresh inputs (at
most ``retimes`` times in all); a candidate whose process uses CPU while stopped in two rounds is
refused. Too few undisturbed rounds: the figure is reported but not trusted (the machine's outcome).

Observed rounds: the calibration rounds, the warm-up rounds and ``OBSERVED_ROUNDS`` more placed among
the measured ones from the secret seed are played with every candidate's window sampled from outside
(verifier.monitor.outside: where its CPU time went, torch's compute or its own code); their times are
never counted (sampling slows a call). Nothing tells the candidate which windows these are.

Every output of every window, warm-up included, is checked against the reference's output for the
same inputs: a random sample of elements for most calls, every element for the audited calls (two
carry the plan's audit inputs, a fresh draw and a near-duplicate of it, checked against the reference
worker's outputs for those trials too) and two more drawn from the secret seed. The runner cannot
tell a checked call from any other. Afterwards: how long collecting the candidate's outputs took
against the reference's (work left running after forward returned), the threads it left, and the
post-timing trials.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from dataclasses import dataclass, field, replace

import numpy as np

from verifier.gates.correctness import Tolerance, check_trials
from verifier.gates.latency import PairedTimes, WindowFacts, latency_gate, summarise
from verifier.monitor.correctness_phase import IntegrityProblem, Peers, run_trial
from verifier.monitor.early_end import ends_early
from verifier.monitor.late_work import early_ns, late_ns, late_work
from verifier.monitor.output_checks import SAMPLE, CheckPlan, check_round, mismatch
from verifier.monitor import window_size
from verifier.monitor.peers import PeerFailure
from verifier.monitor.priority import Boost
from verifier.monitor.reaper import REAPER
from verifier.monitor.reference import Reference
from verifier.monitor.rounds import Rounds, Side, Spent, Turn, disturbance
from verifier.sandbox import messages as msg
from verifier.result import GateResult, LatencyResult, LatencyTime
from verifier.roofline import MachinePeaks, Workload
from verifier.seeds import derive_seed

CALIBRATION_ROUNDS = 2  # one-call rounds before the windows are sized (the fastest call sizes them)
OBSERVED_ROUNDS = 3  # rounds played with every candidate's window sampled from outside, never counted
STEAL_LIMIT = 2  # rounds in which the candidate's process used CPU while stopped, before it is refused
MIN_TRUSTED_ROUNDS = 5
WARM_UP_MOST = 16  # untimed rounds at most before the measured ones (a kernel may fault pages on every call)
STEADY_FAULTS = 64  # pages a window may fault in and count as steady (a Python arena, a stack page: not outputs)
REGROW_FACTOR = 1.25  # the warm-up's windows resize the window when they fit this many times more calls

__all__ = ["SAMPLE", "TimingPlan", "latency", "measure", "mismatch"]


@dataclass(frozen=True)
class TimingPlan:
    rounds: int
    window_ms: float
    max_calls: int
    warmup_rounds: int
    retimes: int
    resamples: int
    bound: float
    boost: bool = True
    min_window_ms: float = 10.0
    draw_ms_per_round: float = 60.0
    settle_rounds: int = 0  # counted rounds after which the phase may end early (0: always ``rounds``)
    settle_ci: float = 0.0  # ... once every side's speedup CI is within this (half its log width)

    @property
    def sure_rounds(self) -> int:
        """Rounds that always play (the audits and the observed rounds are placed among them)."""
        return min(self.rounds, self.settle_rounds) if self.settle_rounds > 0 and self.settle_ci > 0 else self.rounds

    def sizing(self) -> tuple[float, float]:
        """(shortest window, draw budget per round) as window_size takes them."""
        return self.min_window_ms, self.draw_ms_per_round


@dataclass(frozen=True)
class Measurement:
    """Every side's per-call time in each undisturbed round, and how the rounds went."""

    times: tuple[tuple[float, ...], ...]  # per side, ms per call, one per counted round
    calls: int
    retimed: int
    reasons: tuple[str, ...]  # what disturbed the retimed rounds
    priority: str
    trusted: bool
    untrusted_reason: str
    fixed_ms: float = 0.0  # the record side's median empty window, subtracted from every window
    cold_ms: float = 0.0  # the record side's median first-call excess (window_size.cold_cost), subtracted too
    spent: Spent = field(default_factory=Spent)  # where the rounds' wall-clock time went
    late_ms: tuple[float, ...] = ()  # per side, what its collect took beyond the record side's, charged to its windows
    early_ms: tuple[float, ...] = ()  # per side, what it computed before its clock, a window on average, charged

    def facts(self, side: int = 1) -> WindowFacts:
        late = self.late_ms[side] if side < len(self.late_ms) else 0.0
        early = self.early_ms[side] if side < len(self.early_ms) else 0.0
        return WindowFacts(self.calls, self.retimed, self.trusted, self.untrusted_reason, self.priority,
                           self.fixed_ms, self.cold_ms, late, early)


def measure(sides: list[Side], drawer: Reference, plan: list, timing: TimingPlan, tol: Tolerance, seed: int,
            device: bool, machine_s: float, owned: list) -> Measurement:
    """Time every side against ``sides[0]`` (whose outputs every other side's are checked against);
    ``drawer``: the reference worker that draws the inputs (``sides[0]``'s process)."""
    REAPER.drain()  # an earlier verification's arenas still being freed would share the CPUs with the windows
    with Boost() if timing.boost else _NoBoost() as boost:
        spent = Spent()
        picks = np.random.default_rng(derive_seed(seed, "reads"))  # where the outputs' sampled runs lie
        first = Rounds(sides, drawer, window_size.single(drawer), boost, machine_s, spent, owned, picks=picks)
        first.hold_all()
        try:
            counter = _Counter()
            warm = np.random.default_rng(derive_seed(seed, "warm"))
            calibration = []
            for _ in range(CALIBRATION_ROUNDS):  # the first call of a layout is cold (fresh pages, caches)
                turns = first.play([(counter.next(), True)], list(range(len(sides))), device, observe=True,
                                   check=lambda turns: check_round(turns, sides, tol, None, -1, warm))
                _observed(turns)
                calibration += turns
            most = 1 if device else window_size.room(timing.max_calls, drawer)
            calls = window_size.calls_per_window(calibration, timing.window_ms, most, min(first.draw_ms),
                                                 *timing.sizing())
            layout = window_size.resize(sides, calls, most, drawer, owned)
            rounds = Rounds(sides, drawer, layout, boost, machine_s, spent, owned, most, picks)
            counted, disturbed, reasons = _play(rounds, sides, drawer, plan, timing, tol, seed, counter, device, most)
        finally:
            first.release_all()
        priority = "raised" if boost.granted else boost.reason
    late_work(counted or disturbed, sides)
    fixed = window_size.fixed_cost([t for turns in [calibration, *counted, *disturbed] for t in turns])
    cold = window_size.cold_cost([t for turns in [*counted, *disturbed] for t in turns])
    return replace(_measurement(counted, disturbed, sides, rounds.layout.calls, reasons, priority, timing, fixed, cold),
                   spent=spent)


def _play(rounds: Rounds, sides: list[Side], drawer: Reference, plan: list, timing: TimingPlan, tol: Tolerance,
          seed: int, counter: "_Counter", device: bool, most: int) -> tuple[list[list[Turn]], list[list[Turn]], list[str]]:
    order = random.Random(derive_seed(seed, "order"))
    sample = np.random.default_rng(derive_seed(seed, "sample"))
    sure = timing.sure_rounds  # the rounds certain to play: what the candidate must meet is placed among them
    observe = set(random.Random(derive_seed(seed, "observe")).sample(range(sure), min(OBSERVED_ROUNDS, sure)))
    _warm_up(rounds, sides, counter, order, tol, sample, device, timing, most)
    checks = CheckPlan.draw(plan, sure, rounds.layout.calls, seed, drawer)
    settle = np.random.default_rng(derive_seed(seed, "settle"))
    counted: list[list[Turn]] = []
    disturbed: list[list[Turn]] = []
    reasons: list[str] = []
    steals = 0
    while len(counted) < timing.rounds and len(counted) + len(disturbed) < timing.rounds + timing.retimes:
        r = len(counted) + len(disturbed)  # the checks are placed in the first ``rounds`` played: all of them play
        if r in observe:  # before measured round r (its first play only), a round observed from outside
            observe.discard(r)
            _observed_round(rounds, sides, counter, order, tol, sample, device)
        turns = rounds.play(checks.items(r, counter.take(rounds.layout.calls)), _order(order, len(sides)), device,
                            check=lambda turns: check_round(turns, sides, tol, checks, r, sample), whole=checks.whole(r))
        why, kind = disturbance(turns, sides)
        if kind == "steal":
            steals += 1
            if steals >= STEAL_LIMIT:
                raise IntegrityProblem(f"the candidate's process used CPU while it was stopped, in {steals} rounds "
                                       f"({why}): work in system calls or threads outside its own timed calls")
        if why:
            reasons.append(why)
            disturbed.append(turns)
        else:
            counted.append(turns)
            if len(counted) == 1:
                _resize_once_measured(rounds, sides, counter, order, tol, sample, device, timing, most, turns)
            elif ends_early(counted, steals, sides, timing, settle, max(sure, _trusted_min(timing))):
                break
    return counted, disturbed, reasons


def _resize_once_measured(rounds: Rounds, sides: list[Side], counter: "_Counter", order: random.Random,
                          tol: Tolerance, sample: np.random.Generator, device: bool, timing: TimingPlan, most: int,
                          turns: list[Turn]) -> None:
    """The window sized again from the first measured round, where it fits :data:`REGROW_FACTOR` times
    more calls, and one untimed round at the new size (its outputs' pages): the warm-up's candidate
    windows were sampled from outside, which slows a short call (an average pool of 0.04 ms a call
    was sized as if it took 0.16 ms, into 2.5 ms windows that read 7.4x for a 12-13x kernel)."""
    grown = _regrown(rounds, turns, timing, most)
    if grown.calls >= rounds.layout.calls * REGROW_FACTOR:
        rounds.layout = grown
        _observed_round(rounds, sides, counter, order, tol, sample, device)


def _warm_up(rounds: Rounds, sides: list[Side], counter: "_Counter", order: random.Random, tol: Tolerance,
             sample: np.random.Generator, device: bool, timing: TimingPlan, most: int) -> None:
    """Untimed rounds (``warmup_rounds``, none when 0) and more, up to :data:`WARM_UP_MOST`, until a round
    in which no side's window faulted a page in: a user's loop runs in its allocator's steady state. A
    window keeps its outputs, and a peer the ``KEPT_OUTPUTS`` before them (verifier.sandbox.messages),
    and the heap they come from fragments before it settles: a GELU on 19 MB read 12.8 ms a call in
    one-call windows while they faulted 4,608 pages each, 5.5 ms once they stopped (6.7 ms in a user's
    loop). The windows are sized again from these rounds (:func:`window_size.regrow`) where they fit
    :data:`REGROW_FACTOR` times more calls; a grown window warms up again."""
    if timing.warmup_rounds <= 0:
        return
    warm: list[Turn] = []
    played = 0
    while True:  # the first round at each size draws; the rest replay its inputs (untimed, checked all the same)
        turns = _observed_round(rounds, sides, counter, order, tol, sample, device, again=played > 0)
        warm += turns
        played += 1
        steady = all(t.faults <= STEADY_FAULTS for t in turns)
        if played < timing.warmup_rounds or (not steady and played < WARM_UP_MOST):
            continue
        grown = _regrown(rounds, warm, timing, most)
        if grown.calls < rounds.layout.calls * REGROW_FACTOR or played >= WARM_UP_MOST:
            return
        rounds.layout = grown


def _regrown(rounds: Rounds, turns: list[Turn], timing: TimingPlan, most: int):
    """The layout ``turns`` size (window_size.regrow, with the plan's sizing and the draws so far)."""
    return window_size.regrow(rounds.layout, turns, timing.window_ms, most, min(rounds.draw_ms), *timing.sizing())


def _observed_round(rounds: Rounds, sides: list[Side], counter: "_Counter", order: random.Random, tol: Tolerance,
                    sample: np.random.Generator, device: bool, again: bool = False) -> list[Turn]:
    """A round like any other, every candidate's window sampled from outside (its times not counted: the
    sampling slows it): the candidate cannot tell it from a measured one, so torch's compute reached in
    timed windows alone is seen in these. Warm-up rounds are played this way (``again``: on the last
    round's inputs, see Rounds.play)."""
    again = again and rounds.can_replay(rounds.layout.calls)
    items = [(0, True)] * rounds.layout.calls if again else _items(counter, rounds.layout.calls)
    turns = rounds.play(items, _order(order, len(sides)), device, observe=True,
                        check=lambda turns: check_round(turns, sides, tol, None, -1, sample), again=again)
    _observed(turns)
    return turns


def _observed(turns: list[Turn]) -> None:
    problem = next((t.observed for t in turns if t.observed), "")
    if problem:
        raise IntegrityProblem(problem)


def _measurement(counted: list[list[Turn]], disturbed: list[list[Turn]], sides: list[Side], calls: int,
                 reasons: list[str], priority: str, timing: TimingPlan, fixed_ns: float,
                 cold_ns: float = 0.0) -> Measurement:
    """The counted rounds' times, each window's less ``fixed_ns`` (the median empty window of the record
    side: the protocol's cost, the same for every side) and ``cold_ns`` (what the record side's first call of a
    window takes beyond its others: waking its threads, which every side pays once a window), plus what a side's
    Collect took beyond the record side's and what it computed before its clock (verifier.monitor.late_work);
    where too few were undisturbed, every round's, not trusted."""
    trusted, why, used = True, "", counted
    if len(counted) < _trusted_min(timing):
        trusted, used = False, counted + disturbed
        common = statistics.mode(r.split(" (")[0] for r in reasons) if reasons else "no round"
        why = (f"only {len(counted)} of {len(counted) + len(disturbed)} rounds were undisturbed by other work on "
               f"the machine (e.g. {common})")
    late = [0.0] + [late_ns(used, i) for i in range(1, len(sides))]
    turns_of = [[next(t for t in turns if t.side == i) for turns in used] for i in range(len(sides))]
    early = [[early_ns(t) for t in turns_of[i]] for i in range(len(sides))]  # 0 where nothing was recorded
    times = tuple(tuple(t.ms_per_call_less(fixed_ns + cold_ns) + (late[i] + e) / calls / 1e6
                        for t, e in zip(turns_of[i], early[i]))
                  for i in range(len(sides)))
    return Measurement(times, calls, len(disturbed), tuple(reasons), priority, trusted, why, fixed_ns / 1e6,
                       cold_ns / 1e6,
                       late_ms=tuple(x / 1e6 for x in late),
                       early_ms=tuple(statistics.fmean(e) / 1e6 if e else 0.0 for e in early))


def _trusted_min(timing: TimingPlan) -> int:
    """Undisturbed rounds a trusted figure needs: half of the plan's, at least MIN_TRUSTED_ROUNDS."""
    return min(timing.rounds, max(MIN_TRUSTED_ROUNDS, math.ceil(timing.rounds / 2)))


def _items(counter: "_Counter", calls: int) -> list[tuple[int, bool]]:
    return [(index, True) for index in counter.take(calls)]


def _order(rng: random.Random, n: int) -> list[int]:
    order = list(range(n))
    rng.shuffle(order)
    return order


class _Counter:
    """Indices of fresh timed input sets: never the same twice in one verification."""

    def __init__(self) -> None:
        self.n = 0

    def next(self) -> int:
        self.n += 1
        return self.n - 1

    def take(self, k: int) -> list[int]:
        return [self.next() for _ in range(k)]


class _NoBoost(Boost):
    def __enter__(self) -> "Boost":
        self.reason = "timed at normal priority (priority boost switched off)"
        return self


# ---- the verification's latency phase -----------------------------------------------------------------------
def plan_of(settings) -> TimingPlan:
    """The timing plan a VerifySettings asks for."""
    s = settings
    return TimingPlan(s.latency_rounds, s.window_ms, s.max_calls_per_window, s.warmup_rounds,
                      s.latency_rounds if s.retime_rounds is None else s.retime_rounds, s.bootstrap_resamples,
                      s.plausibility_bound, s.boost_priority, s.min_window_ms, s.draw_ms_per_round,
                      s.settle_rounds, s.settle_ci)


def reference_side(peers: Peers) -> Side:
    """The reference worker: the record every output is checked against, and the drawer of inputs."""
    reference = peers.reference
    return Side("reference", reference.process, reference.arena, True, peers.machine_s, reference.attach)


def candidate_side(peers: Peers, name: str = "candidate") -> Side:
    runner = peers.runner

    def attach(arena) -> None:
        if not runner.send(msg.Attach(arena.size), fds=(arena.fd,)):
            raise PeerFailure("died", f"{runner.exit_reason()} during timing", runner.log_tail())

    return Side(name, runner, peers.runner_arena, False, peers.call_s, attach,
                lambda answer, began: peers.after_window(answer, began, "timing"), peers.outside)


def after_timing(peers: Peers, side: Side, plan: list, tol: Tolerance, reference: Side | None = None) -> None:
    """A candidate's checks once its timing is over: the threads it left, the post-timing trials (on the
    arenas the timing made, one input set from offset 0 as in correctness)."""
    peers.runner_arena = side.arena
    if reference is not None:
        peers.reference_arena = reference.arena
    peers.out_start = window_size.single(peers.reference).out_start
    problem = peers.watch.thread_problem("timing")
    if problem:
        raise IntegrityProblem(problem)
    post = [o for t in plan if t.kind == "post" for o in run_trial(peers, t)]
    checks = check_trials(post, peers.reference.outputs, tol)
    if checks.mismatch:
        raise IntegrityProblem(f"outputs after the timed loop are wrong (call-count drift or replay): {checks.mismatch}")


def latency(peers: Peers, plan: list, timing: TimingPlan, tol: Tolerance, seed: int,
            workload: Workload | None, peaks: MachinePeaks | None,
            spares_s: float = 0.0) -> tuple[GateResult, LatencyResult]:
    """The latency gate (``spares_s``: what the session waited for booting spares first, counted in its time)."""
    start = time.perf_counter()
    peers.spent_ns = 0
    sides = [reference_side(peers), candidate_side(peers)]
    measured = measure(sides, peers.reference, plan, timing, tol, seed, peers.staged, peers.machine_s, peers.arenas)
    after_timing(peers, sides[1], plan, tol, sides[0])
    times = PairedTimes(measured.times[1], measured.times[0])
    result = summarise(times, timing.resamples, timing.bound, workload=workload, peaks=peaks, facts=measured.facts())
    seconds, spent = time.perf_counter() - start + spares_s, measured.spent
    parts = (spent.windows, spent.drawing, spent.staging, spent.checking, spares_s)
    result = replace(result, time=LatencyTime(*parts, other_s=max(0.0, seconds - sum(parts)),
                                              rounds_played=spent.played, inputs_s=spent.inputs,
                                              outputs_s=spent.outputs, stage_s=spent.stage, settle_s=spent.settle))
    return latency_gate(result, seconds), result
