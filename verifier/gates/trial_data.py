"""What the monitor compares: one trial's candidate outputs and the reference worker's outputs for it.

Plain data (numpy arrays on the monitor's side, read out of the arenas or off the reference worker's
channel), shared by the correctness gate, the float64 check and the latency gate's re-checks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TrialOutputs:
    """The candidate's outputs for one trial (arrays on the host, in output order)."""

    index: int
    kind: str  # "check" | "perturb" | "post" | "audit" | "repeat"
    distribution: str
    dtypes: tuple[str, ...]
    arrays: tuple[np.ndarray, ...]


@dataclass(frozen=True)
class Fp64Reference:
    """The float64 run of the reference for one trial (verifier.gates.fp64_check).

    ``corrections[k]`` is ``r64 - r`` for output k as float32 (empty where output k is not a float);
    no corrections at all when the float64 model could not run, with the reason in ``note``."""

    corrections: tuple[np.ndarray, ...] = ()
    work: float = 1.0  # input and parameter elements per output element
    note: str = ""


@dataclass(frozen=True)
class ReferenceOutputs:
    index: int
    dtypes: tuple[str, ...]
    arrays: tuple[np.ndarray, ...]
    trivial: tuple[dict[str, float], ...]  # per output: errors of trivial predictors (zeros, mean, copy)
    fp64: Fp64Reference = Fp64Reference()
