"""Tolerances per task, and the rule that judges an output against a reference with them.

:func:`passes` is the verifier's correctness rule (``verifier.gates.correctness``): elementwise
``|c - r| <= atol * max(1, max|r|) + rtol * |r|`` and a relative L2 error ``<= rtol``. The task lint
applies the same rule to trivial outputs (zeros, a constant, an input copy), so a task is judged
trivial exactly when a trivial kernel would pass the verifier.

:func:`tolerances` is scale-aware: below an output magnitude of 1, atol shrinks with the output
(an output of magnitude 1e-6 gets an atol that an all-zero output fails), above it the verifier's
``max(1, max|r|)`` factor scales it (so it is not scaled twice). The lint then raises atol to cover the reference's own
rounding error (its distance to a float64 run), so an honest kernel is never rejected for noise.
"""

from __future__ import annotations

import math

BASE = {"float32": (1e-5, 1e-4), "float16": (1e-2, 1e-2), "bfloat16": (1e-2, 1e-2)}  # atol, rtol
ATOL_MIN = 1e-12
NOISE_MARGIN = 4.0  # the tolerance admits 4x the reference's own rounding error
RTOL_CAP = {"float32": 1e-2, "float16": 1e-1, "bfloat16": 1e-1}  # beyond this the output is noise


def tolerances(dtype: str, output_scale: float) -> tuple[float, float]:
    """(atol, rtol) for a dtype and max|reference output|.

    atol = base * min(1, scale), one significant digit rounded up (fp32 base 1e-5, fp16/bf16 1e-2):
    above 1 the verifier's ``max(1, max|r|)`` factor scales it, below 1 it shrinks with the output
    so that an all-zero output fails. rtol: fp32 1e-4, fp16/bf16 1e-2."""
    atol, rtol = BASE[dtype]
    scale = float(output_scale) if math.isfinite(output_scale) else 1.0
    return ceil_1sig(max(ATOL_MIN, atol * min(1.0, max(scale, 0.0)))), rtol


def noise_atol(output, exact, rtol: float) -> float:
    """The atol with which ``output`` passes the verifier's elementwise rule against ``exact`` with
    NOISE_MARGIN times its error to spare (a float32 reference against its float64 run)."""
    if not exact.numel():
        return 0.0
    r = exact.double()
    magnitude = r.abs()
    scale = max(1.0, float(magnitude.max()))
    need = (output.double() - r).abs_().mul_(NOISE_MARGIN).sub_(magnitude.mul_(rtol))
    return max(0.0, float(need.max()) / scale)


def passes(candidate, reference, atol: float, rtol: float) -> bool:
    """The verifier's correctness rule for one output (finite tensors of one shape, else False)."""
    import torch

    if candidate.shape != reference.shape:
        return False
    wide = torch.float64 if torch.float64 in (candidate.dtype, reference.dtype) else torch.float32
    c, r = candidate.to(wide), reference.to(wide)
    diff = c - r
    norm = float(torch.linalg.vector_norm(r))
    if norm > 0 and float(torch.linalg.vector_norm(diff)) > rtol * norm:  # cheap, and fails first for trivial outputs
        return False
    scale = max(1.0, float(r.abs().max())) if r.numel() else 1.0
    return not bool((diff.abs_() > r.abs().mul_(rtol).add_(atol * scale)).any())


def relative_l2(candidate, reference) -> float:
    import torch

    wide = torch.float64 if torch.float64 in (candidate.dtype, reference.dtype) else torch.float32
    norm = float(torch.linalg.vector_norm(reference.to(wide)))
    err = float(torch.linalg.vector_norm(candidate.to(wide) - reference.to(wide)))
    return err / norm if norm else (0.0 if err == 0 else math.inf)


def ceil_1sig(x: float) -> float:
    """``x`` rounded up to one significant digit (2.3e-5 -> 3e-5)."""
    exponent = math.floor(math.log10(x))
    mantissa = math.ceil(round(x / 10 ** exponent, 6))
    return float(f"{mantissa}e{exponent}")
