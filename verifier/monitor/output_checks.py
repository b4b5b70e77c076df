"""Every output of the timing phase checked against the reference's for the same inputs.

Each call of every window, warm-up included, is compared: a random sample of elements for most calls,
every element for the audited calls and for a few more drawn from the secret seed (:class:`CheckPlan`).
Where the monitor reads the outputs out of the peers' memory itself, the sample is what it read of a call:
runs of consecutive elements at places drawn from the secret seed, the same on every side
(verifier.monitor.remote_outputs.Reads); elsewhere, random elements of the whole outputs.
Two audited calls carry the plan's audit trials instead of fresh timed inputs: a fresh draw, and later
a near-duplicate of it (a few elements changed), whose outputs are also compared in full with the
reference worker's outputs for those trials: a kernel that answers from a cache keyed on a sample of
its inputs returns the first one's output for the second. Nothing tells the runner which call is
which: every call is observed alike.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from verifier.gates import elementwise
from verifier.gates.correctness import Tolerance
from verifier.monitor.correctness_phase import IntegrityProblem
from verifier.monitor.remote_outputs import RUN, RUNS, Sampled
from verifier.seeds import derive_seed

SAMPLE = 4096  # elements compared per output (every element on the fully checked calls)
EXTRA_FULL_CHECKS = 2
RUNS_READ = RUNS * RUN  # the elements of an output read as runs
BATCH_ROWS = 512  # outputs judged at once (two float64 arrays of 16 MiB each)


def mismatch(cand: tuple, ref: tuple, tol: Tolerance, rng: np.random.Generator | None,
             cand_sampled: tuple = (), ref_sampled: tuple = ()) -> str:
    """"" when the candidate's outputs match the reference's (on a sample of elements when ``rng``).
    ``cand_sampled`` / ``ref_sampled``: per output, where it was read as runs (verifier.monitor.remote_outputs:
    the array holds the runs' elements) or None; then exactly those elements are compared."""
    if len(cand) != len(ref):
        return f"returned {len(cand)} outputs, expected {len(ref)}"
    for k, (c, r) in enumerate(zip(cand, ref)):
        c_runs, r_runs = _runs(cand_sampled, k), _runs(ref_sampled, k)
        c_shape, r_shape = (tuple(c.shape) if c_runs is None else c_runs.shape), (tuple(r.shape) if r_runs is None
                                                                                  else r_runs.shape)
        if c_shape != r_shape:
            return f"output {k} has shape {c_shape}, expected {r_shape}"
        flat_c, flat_r = c.reshape(-1), r.reshape(-1)
        if c_runs is not None or r_runs is not None:
            if c_runs is None:
                flat_c = flat_c[r_runs.indices()]
            elif r_runs is None:
                flat_r = flat_r[c_runs.indices()]
            # both as runs: the same elements (one draw a round for every side, and the same shape)
        elif rng is not None and flat_r.size > SAMPLE:
            idx = rng.integers(0, flat_r.size, SAMPLE)
            flat_c, flat_r = flat_c[idx], flat_r[idx]
        found = elementwise.compare(flat_c, flat_r, None, tol.atol, tol.rtol)
        if found.bad_at is not None:
            i = found.bad_at
            return f"output {k}: expected {float(flat_r[i]):.6g}, got {float(flat_c[i]):.6g}"
    return ""


@dataclass(frozen=True)
class CheckPlan:
    """Which calls (round, call in the window) are checked in full, and which carry an audit trial."""

    full: frozenset[tuple[int, int]]
    audits: dict  # (round, call) -> the audit trial placed there
    reference: object  # verifier.monitor.reference.Reference: the audit trials' own outputs

    def whole(self, round_: int) -> frozenset[int]:
        """The calls of round ``round_`` checked in full (their outputs are read whole)."""
        return frozenset(c for r, c in self.full if r == round_)

    @classmethod
    def draw(cls, plan: list, rounds: int, calls: int, seed: int, reference) -> "CheckPlan":
        trials = [t for t in plan if t.kind == "audit"]
        positions = [(r, c) for r in range(rounds) for c in range(calls)]
        picks = random.Random(derive_seed(seed, "audit")).sample(positions, min(len(positions),
                                                                                len(trials) + EXTRA_FULL_CHECKS))
        placed = sorted(picks[:len(trials)])  # the fresh draw is seen before its near-duplicate
        return cls(frozenset(picks), dict(zip(placed, trials)), reference)

    def items(self, round_: int, fresh: list[int]) -> list[tuple[int, bool]]:
        """The input sets of round ``round_``: fresh timed draws, an audit trial where one is placed."""
        items = []
        for c, index in enumerate(fresh):
            trial = self.audits.get((round_, c))
            items.append((trial.index, False) if trial is not None else (index, True))
        return items


def check_round(turns: list, sides: list, tol: Tolerance, checks: CheckPlan | None, round_: int,
                sample: np.random.Generator) -> None:
    """Every call of every side checked against ``sides[0]``'s outputs for the same inputs; raises
    IntegrityProblem (naming the side) at the first wrong one."""
    record = next(t for t in turns if t.side == 0).answer
    for turn in turns:
        if turn.side == 0:
            continue
        cleared = runs_within(turn.answer, record, tol)
        for c, outputs in enumerate(turn.answer.outputs):
            full = checks is not None and (round_, c) in checks.full
            problem = "" if c in cleared and not full else mismatch(
                outputs, record.outputs[c], tol, None if full else sample, _of(turn.answer, c), _of(record, c))
            trial = checks.audits.get((round_, c)) if checks is not None else None
            if not problem and trial is not None:
                problem = mismatch(outputs, checks.reference.outputs(trial.index).arrays, tol, None)
            if problem:
                who = "" if sides[turn.side].name == "candidate" else f" ({sides[turn.side].name})"
                raise IntegrityProblem(f"the output of a timed call is wrong{who} (the kernel skips, replays or "
                                       f"caches work while timed): {problem}")


def runs_within(cand, ref, tol: Tolerance) -> frozenset[int]:
    """The calls whose every output both sides' reads hold as the same runs and that :func:`mismatch` would pass,
    judged for the whole window at once (a window of 256 tiny calls took 0.35 s call by call, a tenth of its
    verification): the same tolerance per output, its scale the largest finite reference magnitude of that
    output's elements. Every other call, and any call with an element out of tolerance, is left to
    :func:`mismatch`, which says what is wrong."""
    rows: list[tuple[int, np.ndarray, np.ndarray]] = []
    for c, (outs, refs) in enumerate(zip(cand.outputs, ref.outputs)):
        c_read, r_read = _of(cand, c), _of(ref, c)
        if len(outs) != len(refs) or len(c_read) != len(outs) or len(r_read) != len(refs):
            continue
        pairs = list(zip(outs, refs, c_read, r_read))
        if all(cs is not None and rs is not None and cs.shape == rs.shape and o.size == r.size == RUNS_READ
               for o, r, cs, rs in pairs):
            rows += [(c, o, r) for o, r, _, _ in pairs]
    within = np.concatenate([_rows_within(rows[at:at + BATCH_ROWS], tol) for at in range(0, len(rows), BATCH_ROWS)]) \
        if rows else np.empty(0, bool)
    calls = [c for c, _, _ in rows]
    bad = {c for c, ok in zip(calls, within) if not ok}
    return frozenset(calls) - bad


def _rows_within(rows: list[tuple[int, np.ndarray, np.ndarray]], tol: Tolerance) -> np.ndarray:
    """Per row (an output read as runs on both sides), whether every element is within tolerance."""
    got, want = np.empty((len(rows), RUNS_READ)), np.empty((len(rows), RUNS_READ))  # float64, as mismatch compares
    for k, (_, o, r) in enumerate(rows):
        got[k], want[k] = o.reshape(-1), r.reshape(-1)
    return elementwise.rows_within(got, want, tol.atol, tol.rtol)


def _of(answer, call: int) -> tuple:
    """Per output of ``call``, how it was read (verifier.monitor.peers.Answer.sampled); () where all whole."""
    return answer.sampled[call] if answer.sampled else ()


def _runs(sampled: tuple, k: int) -> Sampled | None:
    return sampled[k] if k < len(sampled) else None
