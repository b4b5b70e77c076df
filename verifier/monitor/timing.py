"""The latency gate, driven and timed by the monitor.

Paired rounds: each round holds ``calls_per_round`` pairs; a pair is one fresh draw of inputs (the
reference worker draws them from the secret seed, the monitor writes them into both arenas) and one
call of each side, the candidate's runner and the reference worker, in an order drawn per round from
the secret seed. The monitor's ``perf_counter_ns`` brackets each call (a Call command out, Done
back): the round trip of two pipe messages, the same on both sides (``benchmarks/verify_speed``
measures this floor). Per round, each side's median; the gate summarises the rounds
(verifier.gates.latency).

Every timed output is checked against the reference's output for the same inputs: a random sample of
elements for every pair, every element for the audited pairs (two of them carry the plan's audit
inputs, a fresh draw and a near-duplicate of it, checked against the reference worker's outputs for
those trials too) and for two more pairs drawn from the secret seed. The runner cannot tell a checked
call from any other: it is never told, and every call is observed alike. Afterwards the post-timing
trials run and are compared like correctness trials.
"""

from __future__ import annotations

import random
import statistics
import time
from dataclasses import dataclass

import numpy as np

from verifier.gates.correctness import Tolerance, check_trials
from verifier.gates.latency import PairedTimes, latency_gate, summarise
from verifier.monitor.correctness_phase import IntegrityProblem, Peers, run_trial
from verifier.result import GateResult, LatencyResult
from verifier.roofline import MachinePeaks, Workload
from verifier.seeds import derive_seed

SAMPLE = 4096  # elements compared per timed output (every element on the audited pairs)
LATE_WORK_NS = 1_000_000
EXTRA_FULL_CHECKS = 2


@dataclass(frozen=True)
class TimingPlan:
    rounds: int
    calls_per_round: int
    warmup_calls: int
    resamples: int
    bound: float


def mismatch(cand: tuple, ref: tuple, tol: Tolerance, rng: np.random.Generator | None) -> str:
    """"" when the candidate's outputs match the reference's (on a sample of elements when ``rng``)."""
    if len(cand) != len(ref):
        return f"returned {len(cand)} outputs, expected {len(ref)}"
    for k, (c, r) in enumerate(zip(cand, ref)):
        if c.shape != r.shape:
            return f"output {k} has shape {tuple(c.shape)}, expected {tuple(r.shape)}"
        flat_c, flat_r = c.reshape(-1), r.reshape(-1)
        if rng is not None and flat_r.size > SAMPLE:
            idx = rng.integers(0, flat_r.size, SAMPLE)
            flat_c, flat_r = flat_c[idx], flat_r[idx]
        c64, r64 = flat_c.astype(np.float64), flat_r.astype(np.float64)
        finite = np.isfinite(r64)
        scale = max(1.0, float(np.abs(np.where(finite, r64, 0.0)).max(initial=0.0)))
        bad = finite & ~(np.abs(c64 - r64) <= tol.atol * scale + tol.rtol * np.abs(r64))
        if bad.any():
            i = int(np.argmax(bad))
            return f"output {k}: expected {r64[i]:.6g}, got {c64[i]:.6g}"
    return ""


def _pair(peers: Peers, index: int, trial, cand_first: bool) -> tuple:
    """One timed pair on fresh inputs. Both sides first run once untimed, in the order they are then
    timed, so that each timed call follows the other side's call: the reference worker drew the inputs
    just before, and a process that ran last is measurably faster (an A/A bias of 10-30% on sub-ms
    tasks without this, about 5% with it: benchmarks.timing_floor). The untimed calls run on inputs
    both sides ran before (the previous pair's, or the last trial's), never on the timed ones: a kernel
    that remembers its last inputs' result would otherwise time a copy. Each side is timed while the
    other is stopped (verifier.monitor.freeze): no thread the candidate left behind runs while the
    reference is timed, and both sides are woken the same way before their calls."""
    seen = peers.seen
    spec, _ = peers.stage(trial.index if trial else index, trial is None)
    fresh = peers.seen
    sides = ("candidate", "reference") if cand_first else ("reference", "candidate")

    def run(inputs: list, timed: bool) -> dict:  # a timed call runs with the other side stopped
        return {side: peers.candidate(inputs, "timing", other_stopped=timed) if side == "candidate" else
                peers.reference_call(inputs, other_stopped=timed) for side in sides}

    if seen is not None:
        run(peers.place(seen, cand_first), False)
        peers.place(fresh, cand_first)
    results = run(spec, True)
    return results["candidate"], results["reference"]


def late_work(cand_collect_ns: list[int], ref_collect_ns: list[int]) -> str:
    """Staged calls (a device): the median time to fetch the candidate's outputs against the reference's.
    Work left running after forward said it was done makes every fetch of the candidate's slow."""
    if not cand_collect_ns:
        return ""
    cand, ref = statistics.median(cand_collect_ns), statistics.median(ref_collect_ns)
    if cand > 3 * ref + LATE_WORK_NS:
        return (f"fetching the outputs took {cand / 1e6:.2f} ms (median), the reference's {ref / 1e6:.2f} ms: "
                "work continued after forward returned")
    return ""


def measure(peers: Peers, plan: list, timing: TimingPlan, tol: Tolerance, seed: int) -> PairedTimes:
    pairs = timing.rounds * timing.calls_per_round
    audits = [t for t in plan if t.kind == "audit"]
    picks = random.Random(derive_seed(seed, "audit")).sample(range(pairs), min(pairs, len(audits) + EXTRA_FULL_CHECKS))
    audited = dict(zip(picks, audits))
    full = set(picks)
    order = random.Random(derive_seed(seed, "order"))
    sample_rng = np.random.default_rng(derive_seed(seed, "sample"))
    for w in range(timing.warmup_calls):
        _pair(peers, w, None, True)
    cand_ms, ref_ms, collects = [], [], ([], [])
    for r in range(timing.rounds):
        cand_first = order.random() < 0.5
        c_round, r_round = [], []
        for c in range(timing.calls_per_round):
            p = r * timing.calls_per_round + c
            trial = audited.get(p)
            cand, ref = _pair(peers, timing.warmup_calls + p, trial, cand_first)
            problem = mismatch(cand.outputs, ref.outputs, tol, None if p in full else sample_rng)
            if not problem and trial is not None:
                problem = mismatch(cand.outputs, peers.reference.outputs(trial.index).arrays, tol, None)
            if problem:
                raise IntegrityProblem("the output of a timed call is wrong (the kernel skips, replays or caches "
                                       f"work while timed): {problem}")
            c_round.append(cand.ns / 1e6)
            r_round.append(ref.ns / 1e6)
            if peers.staged:
                collects[0].append(cand.collect_ns)
                collects[1].append(ref.collect_ns)
        cand_ms.append(statistics.median(c_round))
        ref_ms.append(statistics.median(r_round))
    problem = late_work(*collects)
    if problem:
        raise IntegrityProblem(problem)
    return PairedTimes(tuple(cand_ms), tuple(ref_ms))


def latency(peers: Peers, plan: list, timing: TimingPlan, tol: Tolerance, seed: int,
            workload: Workload | None, peaks: MachinePeaks | None) -> tuple[GateResult, LatencyResult]:
    start = time.perf_counter()
    peers.spent_ns = 0
    times = measure(peers, plan, timing, tol, seed)
    problem = peers.watch.thread_problem("timing")
    if problem:
        raise IntegrityProblem(problem)
    post = [o for t in plan if t.kind == "post" for o in run_trial(peers, t)]
    checks = check_trials(post, peers.reference.outputs, tol)
    if checks.mismatch:
        raise IntegrityProblem(f"outputs after the timed loop are wrong (call-count drift or replay): {checks.mismatch}")
    result = summarise(times, timing.resamples, timing.bound, workload=workload, peaks=peaks)
    return latency_gate(result, time.perf_counter() - start), result
