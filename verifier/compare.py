"""Several candidates and the reference timed together: ``compare(task, {name: source}) -> Comparison``.

The paper's within-task figure (the best kernel's speedup over the task's first feasible draft) is a
ratio of two kernels' times. Taken from two verifications made at different moments, it carries two
machines' states; bounded by their intervals, it is not a figure at all. Here every candidate goes
through its own gates (static checks, compile, correctness: each its own confined runner, each
against its own reference worker, all from one secret seed), and then the ones that passed are timed
in the same rounds, on the same inputs, each in its own turn while every other side is stopped
(verifier.monitor.timing): one paired measurement, from which each candidate's speedup over the
reference, and any candidate's over any other, is a median of per-round ratios with its own bootstrap
CI. A candidate that fails a gate is reported with the reason and left out of the timing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Mapping

from kernelbench_npu.spec import TaskSpec
from verifier.gates.correctness import Tolerance
from verifier.gates.latency import PairedTimes, summarise
from verifier.monitor import timing
from verifier.monitor.correctness_phase import IntegrityProblem
from verifier.monitor.peers import PeerFailure
from verifier.monitor.pool import POOL
from verifier.monitor.reference import ReferenceFailed
from verifier.monitor.session import InfrastructureError, Session
from verifier.prepare import Prepared, prepare
from verifier.result import LatencyResult, Verdict
from verifier.sandbox.inputs_plan import plan as trial_plan
from verifier.seeds import new_master_seed
from verifier.settings import VerifySettings


@dataclass(frozen=True)
class Ratio:
    """How many times faster ``faster`` ran than ``slower`` in the same rounds: the median of the
    per-round ratios (slower's time / faster's time) with a 95% bootstrap CI."""

    faster: str
    slower: str
    median: float
    ci_low: float
    ci_high: float
    rounds: int


@dataclass(frozen=True)
class Comparison:
    task_id: str
    latency: dict[str, LatencyResult] = field(default_factory=dict)  # each timed candidate against the reference
    failed: dict[str, str] = field(default_factory=dict)  # candidates not timed: "<gate>: <reason>"
    times: dict[str, tuple[float, ...]] = field(default_factory=dict)  # ms per call in each round, "reference" too
    resamples: int = 4000
    seconds: float = 0.0

    def ratio(self, faster: str, slower: str) -> Ratio:
        """``faster``'s speedup over ``slower`` (either may be "reference"), from the shared rounds."""
        summary = summarise(PairedTimes(self.times[faster], self.times[slower]), self.resamples, float("inf"))
        return Ratio(faster, slower, summary.speedup, summary.ci_low, summary.ci_high, summary.rounds)


def compare(task: TaskSpec, candidates: Mapping[str, str], backend: str = "cpu",
            settings: VerifySettings | None = None) -> Comparison:
    """Verify every candidate up to correctness, then time the ones that passed together with the
    reference. Raises InfrastructureError when the machine fails (as ``verify`` reports it)."""
    settings = settings or VerifySettings()
    if not candidates or "reference" in candidates:
        raise ValueError("compare: give at least one candidate, none named 'reference'")
    started, seed = time.perf_counter(), settings.seed if settings.seed is not None else new_master_seed()
    sessions: dict[str, Session] = {}
    failed: dict[str, str] = {}
    try:
        for name, source in candidates.items():
            outcome = _through_correctness(task, source, backend, settings, seed)
            if isinstance(outcome, Session):
                sessions[name] = outcome
            else:
                failed[name] = outcome
        latency, times = _time_together(sessions, settings, failed) if sessions else ({}, {})
    except (ReferenceFailed, OSError) as exc:
        raise InfrastructureError(str(exc)) from None
    finally:
        for session in sessions.values():
            session.close()
    return Comparison(task.task_id, latency, failed, times, settings.bootstrap_resamples,
                      time.perf_counter() - started)


def _through_correctness(task: TaskSpec, source: str, backend: str, settings: VerifySettings,
                         seed: int) -> Session | str:
    """The candidate's session, open after a passed correctness gate; else why it stopped."""
    prepared = prepare(task, source, backend, settings, seed)
    if isinstance(prepared, Verdict):
        return _why(prepared)
    assert isinstance(prepared, Prepared)
    try:
        result = prepared.session.run(prepared.hack, through="correctness")
    except BaseException:
        prepared.session.close()
        raise
    failed = next((g for g in result.gates if not g.passed), None)
    if failed is not None or not prepared.session.plan.runs("latency"):
        prepared.session.close()
        return f"{failed.name}: {failed.reason}" if failed else prepared.session.plan.unavailable("latency").reason
    return prepared.session


def _why(verdict: Verdict) -> str:
    if verdict.infrastructure_error:
        raise InfrastructureError(verdict.infrastructure_error)
    gate = verdict.gate(verdict.failed_gate)
    return f"{gate.name}: {gate.reason}"


def _time_together(sessions: dict[str, Session], settings: VerifySettings,
                   failed: dict[str, str]) -> tuple[dict[str, LatencyResult], dict[str, tuple[float, ...]]]:
    """One paired measurement of the reference (the first session's worker) and every candidate."""
    first = next(iter(sessions.values()))
    plan, tol = trial_plan(settings.correctness_trials), Tolerance(first.c.task.atol, first.c.task.rtol,
                                                                    settings.trivial_margin)
    for session in sessions.values():
        session.peers.spent_ns = 0
    sides = [timing.reference_side(first.peers)] + [timing.candidate_side(s.peers, name) for name, s in sessions.items()]
    timed = timing.plan_of(settings)
    try:
        with POOL.paused():  # no spare's start-up shares the cores with a timed call
            measured = timing.measure(sides, first.reference, plan, timed, tol, first.seed, first.peers.staged,
                                      first.peers.machine_s, first.peers.arenas)
    except (IntegrityProblem, PeerFailure) as problem:  # a candidate misbehaved while timed: the reason names it
        failed.update({name: f"latency: the joint timing stopped: {problem}"[:300] for name in sessions})
        return {}, {}
    latency, times = {}, {"reference": measured.times[0]}
    for k, ((name, session), side, own) in enumerate(zip(sessions.items(), sides[1:], measured.times[1:]), 1):
        try:
            timing.after_timing(session.peers, side, plan, tol, sides[0] if session is first else None)
        except (IntegrityProblem, PeerFailure) as problem:
            failed[name] = f"hack: runtime integrity: {problem}"
            continue
        times[name] = own
        latency[name] = summarise(PairedTimes(own, measured.times[0]), timed.resamples, timed.bound,
                                  workload=session.reference.workload, peaks=session.peaks, facts=measured.facts(k))
    return latency, times
