"""Work a candidate did outside its timed windows, charged to them (verifier.monitor.timing adds it):

- after ``forward`` returned, judged from its Collect (monitor side): after the clock stops each side says where
  its window's outputs lie (on the CPU; the monitor then copies them out of the stopped process,
  verifier.monitor.remote_outputs) or copies them into its arena itself (a device, or a monitor that may not
  read the process), and both sides do the same for the same outputs, so a candidate's Collect that takes
  longer than the reference's in the same rounds is work that went on past its timed window. Far longer
  refuses the candidate (:func:`late_work`); the rest of the excess is charged (:func:`late_ns`);
- before its clock started (:func:`early_ns`): in the settle between a window's continue and its clock the
  round's inputs are already in the arena, and the CPU sampler (verifier.monitor.outside) sees where the CPU went.

docs/timing.md: "What was taken out, and what is left"."""

from __future__ import annotations

import statistics

from verifier.monitor.correctness_phase import IntegrityProblem
from verifier.monitor.rounds import Side, Turn

LATE_WORK_NS = 1_000_000
LATE_WORK_ROUNDS = 3  # fewer rounds than this judge no late work: one round's collect is mostly the machine's noise
LATE_TOLERANCE_NS = 100_000  # a candidate's collect may exceed the reference's by this much uncharged ...
LATE_TOLERANCE_SHARE = 0.02  # ... and this share of its own window (what the excess could add to its speedup)


def late_work(counted: list[list[Turn]], sides: list[Side]) -> None:
    """The time a candidate's Collect took against the reference's in the same round, less what both spent
    waiting for a CPU (other work on the machine): work left running after forward returned makes every
    collect of its outputs slow. Refused where the smallest paired excess over the rounds is far beyond the
    reference's collect, from :data:`LATE_WORK_ROUNDS` rounds on (a single round's collect under load read
    0.00 ms for the reference and 1.01 ms for an honest fused kernel; in CI, with four verifications on two
    cores, an honest GELU's median excess read 5.15 ms over 3 rounds, stalls that are not waits on a run
    queue). A candidate that works late in some rounds only is not refused, but :func:`late_ns` charges the
    median excess to its windows."""
    if len(counted) < LATE_WORK_ROUNDS:
        return
    for i, side in enumerate(sides):
        own, record = _collects(counted, i)
        ref, least = statistics.median(record), min(c - r for c, r in zip(own, record))
        if not side.trusted and least > 2 * ref + LATE_WORK_NS:
            mine = statistics.median(own)
            raise IntegrityProblem(f"collecting the outputs took {mine / 1e6:.2f} ms, the reference's "
                                   f"{ref / 1e6:.2f} ms (medians over {len(counted)} rounds), at least "
                                   f"{least / 1e6:.2f} ms more in every round (waits for a CPU left out): work "
                                   f"continued after forward returned")


def late_ns(rounds: list[list[Turn]], side: int) -> float:
    """What ``side``'s Collect took beyond the record side's in the same rounds (the median of the paired
    excess, waits for a CPU left out), less a tolerance: charged to its windows. Both do the same for the same
    outputs, so an honest kernel's excess is noise; work moved past forward's return into the untimed Collect
    is counted as the kernel's time. (While the runner copied its outputs itself, a replaced output writer
    computed three quarters of a ReLU there, within the refusal's bound of twice the reference's copy, and read
    1.08-1.29x against the honest 0.94-0.99x charged at load 2, the copy after the moved work finding the outputs
    in the cache; since the runner only describes them, the same work is refused by :func:`late_work`.) The
    tolerance is a share of the side's window, what an uncharged excess could add to its speedup: honest
    kernels' excesses read
    -0.37 to +0.38 ms (12 known-good solutions, 2026-11-30), up to 3% of a 13.5 ms window. Judged from
    :data:`LATE_WORK_ROUNDS` rounds on."""
    if len(rounds) < LATE_WORK_ROUNDS:
        return 0.0
    own, record = _collects(rounds, side)
    excess = statistics.median(c - r for c, r in zip(own, record))
    window = statistics.median(next(t for t in turns if t.side == side).answer.ns for turns in rounds)
    return max(0.0, excess - LATE_TOLERANCE_NS - LATE_TOLERANCE_SHARE * window)


def _collects(rounds: list[list[Turn]], side: int) -> tuple[list[int], list[int]]:
    """``side``'s Collect and the record side's in each round, ns, waits for a CPU left out."""
    own = [next(t for t in turns if t.side == side).account.collect_unexplained_ns for turns in rounds]
    record = [next(t for t in turns if t.side == 0).account.collect_unexplained_ns for turns in rounds]
    return own, record


def early_ns(turn: Turn) -> float:
    """What ``turn``'s side did in the settle before its clock started (Turn.settle_work_ns: the CPU time of its
    samples outside libgomp, verifier.monitor.outside.OutsideWatch.work_ns), less the same tolerance as
    :func:`late_ns`: charged to that round's window. Between the continue and the clock no call is in flight, and
    the round's inputs are already in the arena: threads of the candidate's own that computed on them there (two
    helper threads in a sum of squares, 1.72-1.92x against the honest 1.24-1.42x) did the window's work before it
    began. An OpenMP team's spin is not charged (honest kernels, 2026-11-30: 40-60 samples a settle in libgomp,
    about one elsewhere); a pool of the candidate's own that busy-waits in its own code is (5.3 ms a settle for
    two spinning threads: CPU time, so work spread over threads is charged as if done on one). Charged round by
    round, so that work done in the settle of some rounds only is charged in those."""
    window = turn.answer.ns
    return max(0.0, turn.settle_work_ns - LATE_TOLERANCE_NS - LATE_TOLERANCE_SHARE * window)
