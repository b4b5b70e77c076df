"""A candidate's output against the reference's, element by element, in chunks.

One pass over the arrays per question asked, a chunk of :data:`CHUNK` elements at a time widened to
float64: the whole-array float64 copies and temporaries this replaces moved ~10 bytes per element
through memory several times over (0.8 s for one 8M-element output under load; 5.5 s of a ReLU
verification's correctness phase; the L2 norms went through BLAS, whose threads spin and wait
for a CPU on a loaded machine). The answers are the same: the mask, the scale (the largest
reference magnitude, at least 1), the tolerance test ``|c - r| <= atol * scale + rtol * |r|`` and the
L2 norms are computed on the same float64 values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CHUNK = 1 << 16


@dataclass(frozen=True)
class Comparison:
    """Flat indices are into ``reshape(-1)`` of the compared arrays."""

    nonfinite_at: int | None  # the first element finite in the reference (and masked in) but not in the candidate
    bad_at: int | None  # the first element out of tolerance (a non-finite candidate value is one)
    bad: int  # elements out of tolerance
    max_abs_error: float  # over the masked-in elements
    err: float  # L2 norm of candidate - reference over the masked-in elements
    norm: float  # L2 norm of the reference over them


def l2(x: np.ndarray, minus: np.ndarray | None = None, shift: float = 0.0) -> float:
    """The L2 norm of ``x - minus - shift`` (any shape, same size) in float64, a chunk at a time and
    without BLAS (np.linalg.norm's dot runs on BLAS's threads, which spin and wait for a CPU on a
    loaded machine: 10x slower than this, before its whole-array float64 temporaries)."""
    xf = np.asarray(x).reshape(-1)
    mf = None if minus is None else np.asarray(minus).reshape(-1)
    total = 0.0
    for start in range(0, xf.size, CHUNK):
        d = xf[start:start + CHUNK].astype(np.float64)
        if mf is not None:
            d -= mf[start:start + CHUNK]
        if shift:
            d -= shift
        total += float(np.einsum("i,i->", d, d))
    return float(np.sqrt(total))


def _chunks(c: np.ndarray, r: np.ndarray, mask: np.ndarray | None):
    cf, rf = c.reshape(-1), r.reshape(-1)
    mf = None if mask is None else mask.reshape(-1)
    for start in range(0, rf.size, CHUNK):
        c64 = cf[start:start + CHUNK].astype(np.float64)
        r64 = rf[start:start + CHUNK].astype(np.float64)
        m = np.isfinite(r64) if mf is None else mf[start:start + CHUNK]
        yield start, c64, r64, m


def compare(c: np.ndarray, r: np.ndarray, mask: np.ndarray | None, atol: float, rtol: float,
            stop_at_nonfinite: bool = False) -> Comparison:
    """``mask``: the elements compared (None: where the reference is finite). With ``stop_at_nonfinite``
    the comparison ends at the first non-finite candidate value (its other fields are then zero)."""
    nonfinite_at, scale = None, 0.0
    for start, c64, r64, m in _chunks(c, r, mask):
        wrong = m & ~np.isfinite(c64)
        if nonfinite_at is None and wrong.any():
            nonfinite_at = start + int(np.argmax(wrong))
            if stop_at_nonfinite:
                return Comparison(nonfinite_at, None, 0, 0.0, 0.0, 0.0)
        scale = max(scale, float(np.abs(np.where(m, r64, 0.0)).max(initial=0.0)))
    scale = max(1.0, scale)
    bad_at, bad, max_err, err2, norm2 = None, 0, 0.0, 0.0, 0.0
    for start, c64, r64, m in _chunks(c, r, mask):
        cm, rm = np.where(m, c64, 0.0), np.where(m, r64, 0.0)
        diff = np.abs(cm - rm)
        out = ~(diff <= atol * scale + rtol * np.abs(rm))  # a NaN difference is out of tolerance
        count = int(out.sum())
        if count and bad_at is None:
            bad_at = start + int(np.argmax(out))
        bad += count
        max_err = max(max_err, float(np.nanmax(diff, initial=0.0)))
        delta = cm - rm
        err2 += float(np.einsum("i,i->", delta, delta))  # not np.dot: BLAS's threads wait on a loaded machine
        norm2 += float(np.einsum("i,i->", rm, rm))
    return Comparison(nonfinite_at, bad_at, bad, max_err, float(np.sqrt(err2)), float(np.sqrt(norm2)))
