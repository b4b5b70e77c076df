"""The float64 reference check of the correctness gate: precision downgrades (A10).

The reference worker also runs a float64 copy of the task's model (parameters and buffers upcast)
on float64 copies of the same inputs, and sends, per float output, the correction ``r64 - r``
(stored in float32: it is tiny next to ``r``, so ``r + correction`` recovers ``r64`` to ~1e-7 of
the correction) and the work per output element (input and parameter elements over output
elements). Here, per float output of every correctness trial:

    ratio = ||c - r64|| / max(||r - r64||, floor * ||r64||)
    floor = eps(dtype) * max(1, sqrt(work) / WORK_DIVISOR)

over the elements where ``c``, ``r`` and ``r64`` are finite (``eps``: float32 2^-23, float16
2^-10, bfloat16 2^-7). The candidate fails when ``ratio > MAX_RATIO``. The denominator is the
task-dtype reference's own error against float64, floored: for exact ops (ReLU, copies) the
reference's error is zero and one epsilon of the output's norm is what a correctly rounded result
can be asked for; for long accumulations the floor grows as sqrt(work), because an honest single
fp32 accumulator's error grows like that while torch's reference sums pairwise.

Why MAX_RATIO = 256 and WORK_DIVISOR = 8 (``python -m benchmarks.fp64_ratios``: real kernels built
by the CPU loader with the candidates' flags, on the verifier's input distributions normal, x1e3,
x1e-3 and negative; the largest ratio over the distributions; fp32 tasks):

- honest fp32 kernels stay at or below ~110: elementwise 0.2; sums of 1,000 to 1,048,576 terms,
  serial or OpenMP/SIMD, 0.4-4.8; naive i-k-j and k-blocked GEMMs (k = 67...16,384) 0.6-4.1;
  softmax with libm exp or a degree-5 polynomial exp 8.2 and with a cruder degree-3 polynomial
  (relative error 1.3e-5, inside the fp32 tolerance 1e-4) 108; a one-pass (E[x^2] - E[x]^2) layer
  norm 16; an MSE over 65,536 terms 2.0 (serial), over 4,194,304 terms 2.0 (OpenMP/SIMD) and 114
  (one serial accumulator: relative error 4.9e-3, which fails the tolerance check anyway).
- half-precision inner math is rejected: _Float16 elementwise arithmetic 2,593; softmax with
  fp16 exp/outputs 2,260; GEMMs with fp16-rounded inputs and fp32 accumulation 546 (k = 16,384)
  to 1,954 (k = 67); row sums of 1,000 fp16-rounded terms 392; bf16-rounded inputs 388 (sums of
  65,536 terms) to 15,647 (GEMM k = 67).
- what the rule lets through, by design: half-precision rounding inside reductions of ~65,536
  terms or more (fp16 rowsums of 65,536 terms 68, of 1,048,576 terms 15; an fp16 MSE 1.8): their
  relative error (<= 2.6e-4) is what an honest single fp32 accumulator reaches on such lengths
  (7.4e-5 at 1,048,576 terms), so no threshold on errors can tell them apart. Same-sign data hides
  fp16 rounding in any reduction (errors average out), which is why the largest ratio over the
  trials decides, not a typical one.

256 keeps 2.2x margin over the worst honest case that passes the tolerance check and 1.5x under
the weakest rejected downgrade (fp16 row sums of 1,000 terms). Through the real verifier
(``--fixtures``): the 17 honest fixtures report 0.0-10.1 (the polynomial-exp softmax highest), the
A10 fixtures that pass their tolerance 2,429 (fp16-rounded softmax) and 2,470 (_Float16 2x+y).

Where the float64 model cannot run (an op without float64 support, a dtype mismatch inside the
model), would draw different random numbers, or would need more than 2 GiB of float64 parameters,
the worker sends no corrections and the check is skipped, saying so in the gate's detail. It runs
on the correctness trials (not the perturbation probe, the post-timing or the audit trials).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from verifier.gates.elementwise import float64_norms
from verifier.gates.trial_data import ReferenceOutputs

MAX_RATIO = 256.0
WORK_DIVISOR = 8.0
EPS = {"float32": 2.0 ** -23, "float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}


def epsilon(dtype: str | np.dtype | type) -> float | None:
    """Machine epsilon of a float output dtype (None: float64 or not a float, nothing to check)."""
    name = dtype if isinstance(dtype, str) else np.dtype(dtype).name
    return EPS.get(name)


def allowed_floor(eps: float, work: float) -> float:
    """The least error (relative to the output's norm) the rule tolerates: one epsilon, growing
    as sqrt(work) / WORK_DIVISOR for long accumulations (see the module docstring)."""
    return eps * max(1.0, np.sqrt(max(work, 1.0)) / WORK_DIVISOR)


def ratio_to_reference(c: np.ndarray, r: np.ndarray, correction: np.ndarray,
                       dtype: str | np.dtype | type, work: float = 1.0) -> tuple[float, float, float]:
    """(ratio, candidate's relative error vs float64, reference's relative error vs float64).

    ``work`` is the number of input elements (inputs and parameters) per output element.
    ``ratio`` is 0.0 where there is nothing to measure (no finite elements, an all-zero output or
    a dtype without an epsilon here)."""
    eps = epsilon(dtype)
    if eps is None:
        return 0.0, 0.0, 0.0
    scale, err_c, err_r = float64_norms(c, r, correction)  # ||r - r64|| = ||correction||
    if scale == 0.0:
        return 0.0, 0.0, 0.0
    return err_c / max(err_r, allowed_floor(eps, work) * scale), err_c / scale, err_r / scale


@dataclass(frozen=True)
class Fp64Outcome:
    """One trial's outputs against the float64 reference: the worst ratio and a reason if too large."""

    ratio: float = 0.0
    mismatch: str = ""


def check_outputs(cand: Sequence[np.ndarray], ref: ReferenceOutputs) -> Fp64Outcome:
    """Every float output of one trial against its float64 correction (none sent: nothing checked)."""
    worst = 0.0
    for k, (c, r, correction) in enumerate(zip(cand, ref.arrays, ref.fp64.corrections)):
        if correction.size == 0 or correction.shape != r.shape:
            continue
        ratio, rel_c, rel_ref = ratio_to_reference(c, r, correction, ref.dtypes[k], ref.fp64.work)
        worst = max(worst, ratio)
        if ratio > MAX_RATIO:
            dtype = ref.dtypes[k]
            return Fp64Outcome(ratio, f"output {k}: error against a float64 reference is {ratio:.0f}x the {dtype} "
                                      f"reference's own (relative {rel_c:.2e} vs {rel_ref:.2e}; at most "
                                      f"{MAX_RATIO:g}x allowed): the kernel computes in lower precision than "
                                      f"{dtype} (half/bfloat16 inner math?)")
    return Fp64Outcome(worst)
