"""A candidate's output against the reference's, element by element, in chunks.

One pass over the arrays per question asked, a chunk of :data:`CHUNK` elements at a time widened to
float64: the whole-array float64 copies and temporaries this replaces moved ~10 bytes per element
through memory several times over (0.8 s for one 8M-element output under load; 5.5 s of a ReLU
verification's correctness phase; the L2 norms went through BLAS, whose threads spin and wait
for a CPU on a loaded machine). The answers are the same: the mask, the scale (the largest
reference magnitude, at least 1), the tolerance test ``|c - r| <= atol * scale + rtol * |r|`` and the
L2 norms are computed on the same float64 values.

Each chunk is widened once into buffers made once per call (``np.copyto``, ``out=``): no temporaries
per operation. What needs no widening is not widened: whether a value is finite and the largest
reference magnitude are exact in a float array's own dtype (one pass over it, in large chunks), and a
chunk where every element is compared skips the masking. 43 ms instead of 86-90 ms for one 8M-element
float32 output (``compare``), the same answers to the bit (the chunks, and so the sums, are the same).
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
    return float(np.sqrt(_squares(x, [(minus, shift)])[0]))


def l2_each(x: np.ndarray, against: list[tuple[np.ndarray | None, float]]) -> list[float]:
    """``[l2(x, minus, shift) for minus, shift in against]``, in one pass over ``x``."""
    return [float(np.sqrt(total)) for total in _squares(x, against)]


def _squares(x: np.ndarray, against: list[tuple[np.ndarray | None, float]]) -> list[float]:
    xf = np.asarray(x).reshape(-1)
    others = [(None if minus is None else np.asarray(minus).reshape(-1), shift) for minus, shift in against]
    totals = [0.0] * len(others)
    wide, d = np.empty(min(CHUNK, xf.size)), np.empty(min(CHUNK, xf.size))
    for start in range(0, xf.size, CHUNK):
        n = min(CHUNK, xf.size - start)
        w, dk = wide[:n], d[:n]
        np.copyto(w, xf[start:start + n], casting="unsafe")
        for k, (minus, shift) in enumerate(others):
            if minus is None and not shift:
                totals[k] += float(np.einsum("i,i->", w, w))
                continue
            np.copyto(dk, w)
            if minus is not None:
                np.subtract(dk, minus[start:start + n], out=dk, casting="unsafe")
            if shift:
                dk -= shift
            totals[k] += float(np.einsum("i,i->", dk, dk))
    return totals


def float64_norms(c: np.ndarray, r: np.ndarray, correction: np.ndarray) -> tuple[float, float, float]:
    """With ``r64 = r + correction`` (the float64 reference): ``(||r64||, ||c - r64||, ||correction||)``
    over the elements where ``r64`` and ``c`` are finite, in float64, a chunk at a time."""
    cf, rf = np.asarray(c).reshape(-1), np.asarray(r).reshape(-1)
    kf = np.asarray(correction).reshape(-1)
    size = min(CHUNK, rf.size)
    ref, cand, corr = np.empty(size), np.empty(size), np.empty(size)
    totals = [0.0, 0.0, 0.0]
    for start in range(0, rf.size, CHUNK):
        n = min(CHUNK, rf.size - start)
        rk, ck, kk = ref[:n], cand[:n], corr[:n]
        np.copyto(rk, rf[start:start + n], casting="unsafe")
        np.copyto(kk, kf[start:start + n], casting="unsafe")
        rk += kk
        np.copyto(ck, cf[start:start + n], casting="unsafe")
        finite = np.isfinite(rk) & np.isfinite(ck)
        if not finite.all():
            rk, ck, kk = rk[finite], ck[finite], kk[finite]
        ck -= rk
        for k, values in enumerate((rk, ck, kk)):
            totals[k] += float(np.einsum("i,i->", values, values))
    return tuple(float(np.sqrt(t)) for t in totals)


def _exact_natively(a: np.ndarray) -> bool:
    """Whether ``a``'s finiteness and magnitudes are the same in its own dtype as widened to float64."""
    return a.dtype.kind == "f" and a.dtype.itemsize <= 8


def _first_pass(cf: np.ndarray, rf: np.ndarray, mf: np.ndarray | None) -> tuple[int | None, float]:
    """(the first masked-in element where the candidate is not finite, the largest masked-in
    reference magnitude, NaN ignored), in large chunks of the arrays' own dtypes where that is exact."""
    native = _exact_natively(cf) and _exact_natively(rf)
    nonfinite_at, scale, step = None, 0.0, 16 * CHUNK
    for start in range(0, rf.size, step):
        c, r = cf[start:start + step], rf[start:start + step]
        if not native:
            c, r = c.astype(np.float64), r.astype(np.float64)
        m = np.isfinite(r) if mf is None else mf[start:start + step]
        every = bool(m.all())
        finite = np.isfinite(c)
        if nonfinite_at is None and not finite.all():
            wrong = ~finite if every else (m & ~finite)
            if wrong.any():
                nonfinite_at = start + int(np.argmax(wrong))
        if every and r.size:  # NaN-ignoring: a reference NaN only a caller's mask lets in does not scale
            scale = max(scale, abs(float(np.fmax.reduce(r))), abs(float(np.fmin.reduce(r))))
        elif r.size:
            scale = max(scale, float(np.fmax.reduce(np.abs(np.where(m, r, 0)), initial=0)))
    return nonfinite_at, scale


def compare(c: np.ndarray, r: np.ndarray, mask: np.ndarray | None, atol: float, rtol: float,
            stop_at_nonfinite: bool = False) -> Comparison:
    """``mask``: the elements compared (None: where the reference is finite). With ``stop_at_nonfinite``
    the comparison ends at the first non-finite candidate value (its other fields are then zero)."""
    cf, rf = np.asarray(c).reshape(-1), np.asarray(r).reshape(-1)
    mf = None if mask is None else np.asarray(mask).reshape(-1)
    nonfinite_at, scale = _first_pass(cf, rf, mf)
    if nonfinite_at is not None and stop_at_nonfinite:
        return Comparison(nonfinite_at, None, 0, 0.0, 0.0, 0.0)
    bound = atol * max(1.0, scale)
    size = min(CHUNK, rf.size)
    ref, diff, limit = np.empty(size), np.empty(size), np.empty(size)
    bad_at, bad, max_err, err2, norm2 = None, 0, 0.0, 0.0, 0.0
    for start in range(0, rf.size, CHUNK):
        n = min(CHUNK, rf.size - start)
        rk, dk, lk = ref[:n], diff[:n], limit[:n]
        np.copyto(rk, rf[start:start + n], casting="unsafe")
        m = np.isfinite(rk) if mf is None else mf[start:start + n]
        np.copyto(dk, cf[start:start + n], casting="unsafe")
        if not m.all():  # elements not compared count as 0 on both sides
            np.copyto(dk, 0.0, where=~m)
            np.copyto(rk, 0.0, where=~m)
        within = _within(dk, rk, lk, bound, rtol)
        count = n - int(np.count_nonzero(within))
        if count and bad_at is None:
            bad_at = start + int(np.argmin(within))
        bad += count
        max_err = max(max_err, float(np.fmax.reduce(dk, initial=0.0)))
        err2 += float(np.einsum("i,i->", dk, dk))  # not np.dot: BLAS's threads wait on a loaded machine
        norm2 += float(np.einsum("i,i->", rk, rk))
    return Comparison(nonfinite_at, bad_at, bad, max_err, float(np.sqrt(err2)), float(np.sqrt(norm2)))


def rows_within(got: np.ndarray, want: np.ndarray, atol: float, rtol: float) -> np.ndarray:
    """Per row of two float64 (rows, n) arrays, whether :func:`compare` finds no element out of tolerance
    (``bad_at is None``, no mask): the same scale per row (its largest finite reference magnitude, at least 1),
    the same test on the same float64 values. For many small outputs at once (a timed window's samples,
    verifier.monitor.output_checks); both arrays are overwritten."""
    finite = np.isfinite(want)
    if not finite.all():  # elements where the reference is not finite are not compared (0 on both sides)
        got[~finite], want[~finite] = 0.0, 0.0
    bound = atol * np.maximum(1.0, np.abs(want).max(axis=1, initial=0.0))
    with np.errstate(invalid="ignore"):  # NaN where the candidate is not finite: out of tolerance
        return _within(got, want, want, bound[:, None], rtol).all(axis=1)


def _within(diff: np.ndarray, ref: np.ndarray, limit: np.ndarray, bound, rtol: float) -> np.ndarray:
    """The tolerance test of :func:`compare` and :func:`rows_within`, in place: ``diff`` (the candidate's values)
    becomes ``|diff - ref|`` and ``limit`` (which may be ``ref`` itself) ``bound + rtol * |ref|``; True where the
    first is within the second (a NaN difference is not). ``bound``: atol times the scale (a scalar, or a column)."""
    diff -= ref
    np.abs(diff, out=diff)
    np.abs(ref, out=limit)
    limit *= rtol
    limit += bound
    return np.less_equal(diff, limit)
