"""The correctness gate, driven by the monitor.

For every correctness trial of the plan (verifier.sandbox.inputs: the task's own inputs and redrawn
distributions, then the perturbation probe of trial 0), the reference worker draws the trial's inputs
into its arena from the secret seed, the monitor copies them into the runner's arena and calls
``forward``; the outputs come back through the arena and are compared by the monitor with the
reference worker's (verifier.gates.correctness). Trial 0 runs twice (the second on the same inputs
written again: a nondeterministic kernel, or one whose output depends on call history, differs).
After every call: the runner's watch (verifier.monitor.watch) and the inputs left unchanged.
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass, replace

import numpy as np

from verifier.gates.correctness import Tolerance, check_trials
from verifier.gates.trial_data import TrialOutputs
from verifier.monitor.freeze import stopped
from verifier.monitor.outside import OutsideWatch
from verifier.monitor.peers import PeerFailure, call
from verifier.monitor.reference import Reference, ReferenceFailed
from verifier.monitor.watch import Watch, inputs_changed
from verifier.result import GateResult
from verifier.sandbox.arena import Arena
from verifier.sandbox.spawn import Sandboxed


class IntegrityProblem(Exception):
    """A runtime integrity violation (the hack gate fails with it)."""


@dataclass
class Peers:
    """The runner and the reference worker with their arenas, as one verification uses them."""

    runner: Sandboxed
    runner_arena: Arena
    reference: Reference
    reference_arena: Arena
    out_start: int
    watch: Watch
    staged: bool = False  # a device backend: Prime, Call, Collect (verifier.monitor.peers.call)
    call_s: float = 120.0  # one candidate call (a hang is the candidate's)
    budget_s: float = 120.0  # all of the candidate's calls in a phase (far too slow is the candidate's)
    machine_s: float = 480.0  # one step of the reference worker (beyond it: the machine is overloaded)
    tolerance: Tolerance | None = None
    note: str = ""  # the runner's latest runtime note (the interpreter's autotune configs)
    spent_ns: int = 0  # the candidate's calls so far in this phase
    seen: tuple[list, bytes] | None = None  # the last staged inputs (spec, bytes): both sides have run them
    outside: OutsideWatch | None = None  # the runner's CPU samples, read from the OS (None: perf unavailable)

    def place(self, inputs: tuple[list, bytes], cand_first: bool) -> list:
        """Inputs staged earlier, written again by the monitor into both arenas, the arena of the side
        timed first last (which side that is is drawn per round: neither side is favoured); their spec."""
        spec, data = inputs
        for arena in (self.reference_arena, self.runner_arena) if cand_first else (self.runner_arena,
                                                                                   self.reference_arena):
            arena.map[:len(data)] = data
        return spec

    def stage(self, index: int, timing: bool) -> tuple[list, int]:
        """A trial's (or timed pair's) inputs drawn by the reference worker and copied, by the monitor,
        into the runner's arena; (their spec, the bytes they span)."""
        spec = self.reference.draw(index, timing, time.monotonic() + self.machine_s)
        span = _span(spec)
        data = self.reference_arena.map[:span]
        self.runner_arena.map[:span] = data
        self.reference_arena.map[:span] = data  # both sides' inputs last written by the monitor (same cache state)
        self.seen = (spec, data)
        return spec, span

    def candidate(self, spec: list, during: str, other_stopped: bool = False):
        """The candidate on ``spec``; ``other_stopped``: with the reference worker stopped throughout (a
        timed call: each side is timed while the other is stopped, verifier.monitor.freeze)."""
        began = time.monotonic_ns()
        observed = self.outside is not None and not other_stopped  # timed calls: the latency phase's windows
        with self.outside.watching() if observed else nullcontext() as window:
            with stopped(self.reference.process.pid()) if other_stopped else nullcontext():
                answer = call(self.runner, self.runner_arena, spec, self.out_start, time.monotonic() + self.call_s,
                              during, self.staged)
        self.spent_ns += time.monotonic_ns() - began
        if self.spent_ns > self.budget_s * 1e9:
            raise PeerFailure("timeout", f"the candidate's calls took more than {self.budget_s:.0f} s in all during "
                                         f"{during} (far too slow?)")
        problem = self.watch.after_call(answer.native_calls)
        if not problem and observed:
            problem = self.outside.after_call(window.samples, during)
        if problem:
            raise IntegrityProblem(problem)
        self.note = answer.note or self.note
        return answer

    def reference_call(self, spec: list, other_stopped: bool = False):
        """The reference on ``spec``; ``other_stopped``: with the runner stopped throughout (a timed call)."""
        try:
            with stopped(self.watch.pid) if other_stopped else nullcontext():
                return call(self.reference.process, self.reference_arena, spec, self.out_start,
                            time.monotonic() + self.machine_s, "the reference's timing", self.staged)
        except PeerFailure as failure:
            raise ReferenceFailed(f"reference worker failed: {failure.reason}") from None


def _span(spec: list) -> int:
    from verifier.sandbox.values import layouts_in

    return max((lay.offset + lay.span() for lay in layouts_in(spec, 1 << 62)), default=0)


def run_trial(peers: Peers, trial, repeat: bool = False) -> list[TrialOutputs]:
    """One trial (twice when ``repeat``); its outputs, typed for the comparison."""
    spec, span = peers.stage(trial.index, False)
    where = f"trial {trial.index} ({trial.distribution} inputs)"
    answer = peers.candidate(spec, where)
    if inputs_changed(peers.runner_arena, peers.reference_arena, span):
        raise IntegrityProblem("forward modified its inputs")
    results = [TrialOutputs(trial.index, trial.kind, trial.distribution, answer.dtypes, answer.outputs)]
    if repeat:
        peers.runner_arena.map[:span] = peers.reference_arena.map[:span]
        again = peers.candidate(spec, where)
        if not _agree(answer.outputs, again.outputs, peers):
            raise IntegrityProblem("two calls on the same input gave different outputs (nondeterministic, or "
                                   "the output depends on earlier calls)")
    return results


def _agree(first: tuple[np.ndarray, ...], second: tuple[np.ndarray, ...], peers: Peers) -> bool:
    tol = peers.tolerance
    if len(first) != len(second):
        return False
    for a, b in zip(first, second):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if not np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=tol.rtol, atol=tol.atol, equal_nan=True):
            return False
    return True


def correctness(peers: Peers, plan: list, tol: Tolerance, start: float) -> tuple[GateResult, int]:
    """The gate, and the number of trials skipped (reference non-finite for their distribution)."""
    peers.tolerance, peers.spent_ns = tol, 0
    outputs: list[TrialOutputs] = []
    for trial in [t for t in plan if t.kind in ("check", "perturb")]:
        outputs += run_trial(peers, trial, repeat=trial.index == 0)
    problem = peers.watch.thread_problem("correctness") or (peers.outside.overall_problem() if peers.outside else "")
    if problem:
        raise IntegrityProblem(problem)
    checks = check_trials(outputs, peers.reference.outputs, tol)
    gate = checks.gate(time.perf_counter() - start)
    if peers.note:  # e.g. which @triton.autotune configs the interpreter ran: the reason when it passed
        gate = replace(gate, reason=gate.reason or peers.note.replace("\n", "; ")[:300],
                       detail=f"{gate.detail}\n{peers.note}".strip())
    return gate, checks.skipped


__all__ = ["IntegrityProblem", "Peers", "PeerFailure", "correctness", "run_trial"]
