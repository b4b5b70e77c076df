"""The correctness gate, driven by the monitor.

For every correctness trial of the plan (verifier.sandbox.inputs: the task's own inputs and redrawn
distributions, then the perturbation probe of trial 0), the reference worker draws the trial's inputs
into its arena from the secret seed, the monitor copies them into the runner's arena and calls
``forward`` (a window of one call, verifier.monitor.peers.window: the same commands as a timed one); the outputs come back through the arena and are compared by the monitor with the
reference worker's (verifier.gates.correctness). Trial 0 runs twice (the second on the same inputs
written again: a nondeterministic kernel, or one whose output depends on call history, differs).
After every call: the runner's watch (verifier.monitor.watch) and the inputs left unchanged.
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass, field, replace

import numpy as np

from verifier.gates.correctness import Tolerance, check_trials
from verifier.gates.trial_data import TrialOutputs
from verifier.monitor.outside import OutsideWatch
from verifier.monitor.peers import Answer, PeerFailure, window
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
    staged: bool = False  # a device backend: every window holds one call, its cache flushed before it
    call_s: float = 120.0  # one candidate window (a hang is the candidate's)
    budget_s: float = 120.0  # all of the candidate's calls in a phase (far too slow is the candidate's)
    machine_s: float = 480.0  # one step of the reference worker (beyond it: the machine is overloaded)
    tolerance: Tolerance | None = None
    note: str = ""  # the runner's latest runtime note (the interpreter's autotune configs)
    spent_ns: int = 0  # the candidate's calls so far in this phase
    arenas: list[Arena] = field(default_factory=list)  # made during the phases, closed by the verification
    outside: OutsideWatch | None = None  # the runner's CPU samples, read from the OS (None: perf unavailable)

    def stage(self, index: int) -> tuple[list, int]:
        """Trial ``index``'s inputs drawn by the reference worker and copied, by the monitor, from its arena
        into the runner's (one copy, no buffer between: a trial's calls are untimed, so no cache state needs
        making alike; a bytes copy of an 8M-element input faulted 32 MiB of fresh pages in the monitor on every
        trial); (their spec, the bytes they span)."""
        (spec,) = self.reference.draw([(index, False, 0)], time.monotonic() + self.machine_s)
        span = _span(spec)
        with memoryview(self.reference_arena.map) as drawn:
            self.runner_arena.map[:span] = drawn[:span]
        return spec, span

    def candidate(self, sets: list[list], during: str) -> Answer:
        """One window of the candidate's calls on ``sets`` (inputs already in its arena), checked."""
        began = time.monotonic_ns()
        with self.outside.watching() if self.outside is not None else nullcontext() as watched:
            answer = window(self.runner, self.runner_arena, sets, self.out_start, time.monotonic() + self.call_s,
                            during)
        self.after_window(answer, began, during)
        if self.outside is not None:  # untimed calls only: the latency phase's windows are never sampled
            problem = self.outside.after_call(watched.samples, during)
            if problem:
                raise IntegrityProblem(problem)
        return answer

    def after_window(self, answer: Answer, began_ns: int, during: str) -> None:
        """The window's time counted against the phase's budget; the watch read."""
        self.spent_ns += time.monotonic_ns() - began_ns
        if self.spent_ns > self.budget_s * 1e9:
            raise PeerFailure("timeout", f"the candidate's calls took more than {self.budget_s:.0f} s in all during "
                                         f"{during} (far too slow?)")
        problem = self.watch.after_call(answer.native_calls, len(answer.outputs))
        if problem:
            raise IntegrityProblem(problem)
        self.note = answer.note or self.note


def _span(spec: list) -> int:
    from verifier.sandbox.values import layouts_in

    return max((lay.offset + lay.span() for lay in layouts_in(spec, 1 << 62)), default=0)


def run_trial(peers: Peers, trial, repeat: bool = False) -> list[TrialOutputs]:
    """One trial (twice when ``repeat``); its outputs, typed for the comparison."""
    spec, span = peers.stage(trial.index)
    where = f"trial {trial.index} ({trial.distribution} inputs)"
    answer = peers.candidate([spec], where)
    if inputs_changed(peers.runner_arena, peers.reference_arena, span):
        raise IntegrityProblem("forward modified its inputs")
    results = [TrialOutputs(trial.index, trial.kind, trial.distribution, answer.dtypes[0], answer.outputs[0])]
    if repeat:
        peers.runner_arena.map[:span] = peers.reference_arena.map[:span]
        again = peers.candidate([spec], where)
        if not _agree(answer.outputs[0], again.outputs[0], peers):
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
        if _same_bits(a, b):  # a deterministic kernel's usual case: no float64 copies (0.1-0.6 s for 8M elements)
            continue
        if not np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=tol.rtol, atol=tol.atol, equal_nan=True):
            return False
    return True


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two arrays of one shape and dtype hold the same bytes (NaNs of one payload included)."""
    return np.array_equal(np.ascontiguousarray(a).reshape(-1).view(np.uint8),
                          np.ascontiguousarray(b).reshape(-1).view(np.uint8))


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
