"""Task lint: can a reference certify anything? Runs in the lint worker process (trusted problems only).

A task fails lint (and is quarantined with every reason found) when its reference output is
not a single tensor, non-finite, changes its inputs, is nondeterministic (two models built with the
same seed, two runs), constant, independent of its inputs (two input seeds give outputs equal within
tolerance), or close enough to a trivial output (all zeros, the mean, an input returned unchanged)
that the trivial output passes at the variant's tolerance; or when one forward exceeds the profile's
time budget. See research/verifier.md section 3.5 for why each matters.
"""

from __future__ import annotations

import random
import statistics
import time
from dataclasses import asdict, dataclass

import torch

from kernelbench_npu.loader import execute
from kernelbench_npu.sizing import cast_input
from kernelbench_npu.variants import tolerances

MODEL_SEED, INPUT_SEED_A, INPUT_SEED_B = 0, 1, 2
TIMED_RUNS, TIMING_BUDGET_S = 5, 1.0


@dataclass(frozen=True)
class LintOutcome:
    status: str  # "ok" | "quarantined"
    reason: str | None  # every failed check, "; "-joined
    reference_ms: float | None  # median forward time on this machine (a measurement)
    output_scale: float | None  # max |reference output|
    atol: float
    rtol: float

    def as_dict(self) -> dict:
        return asdict(self)


def lint_source(source: str, dtype: str, time_budget_ms: float, path: str = "<problem>") -> LintOutcome:
    """Run every check on one adapted problem source."""
    torch_dtype = getattr(torch, dtype)
    namespace = execute(path, source)
    model = _build_model(namespace, torch_dtype)
    inputs_a = _make_inputs(namespace, INPUT_SEED_A, torch_dtype)
    pristine = [_clone(x) for x in inputs_a]
    with torch.no_grad():
        out = model(*inputs_a)
    if not isinstance(out, torch.Tensor):
        return _quarantine(f"forward returned a {type(out).__name__}, expected one tensor", dtype)
    reasons: list[str] = []
    if not all(_same(a, b) for a, b in zip(inputs_a, pristine)):
        reasons.append("the reference modifies its inputs")
    if out.is_floating_point() and not bool(torch.isfinite(out).all()):
        return _quarantine("output has NaN or Inf", dtype)
    scale = float(out.detach().abs().max().double()) if out.numel() else 0.0
    atol, rtol = tolerances(dtype, scale)
    reference_ms, repeat = _time_forward(model, pristine)
    reasons += _determinism(namespace, torch_dtype, pristine, out, repeat, atol, rtol)
    reasons += _sensitivity(namespace, model, torch_dtype, out, atol, rtol)
    reasons += _trivial_outputs(out, pristine, atol, rtol)
    if reference_ms > time_budget_ms:
        reasons.append(f"reference forward takes {reference_ms:.4g} ms > budget {time_budget_ms:g} ms")
    status = "quarantined" if reasons else "ok"
    return LintOutcome(status, "; ".join(reasons) or None, round_sig(reference_ms, 3), scale, atol, rtol)


def _quarantine(reason: str, dtype: str) -> LintOutcome:
    atol, rtol = tolerances(dtype, 1.0)
    return LintOutcome("quarantined", reason, None, None, atol, rtol)


def _build_model(namespace: dict, torch_dtype) -> torch.nn.Module:
    _seed(MODEL_SEED)
    init_inputs = namespace["get_init_inputs"]()
    _seed(MODEL_SEED)
    return namespace["Model"](*init_inputs).eval().to(torch_dtype)


def _make_inputs(namespace: dict, seed: int, torch_dtype) -> list:
    _seed(seed)
    return [cast_input(x, torch_dtype) for x in namespace["get_inputs"]()]


def _seed(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)


def _clone(x):
    return x.clone() if isinstance(x, torch.Tensor) else x


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return a.shape == b.shape and bool(torch.equal(a, b) or (a.is_floating_point() and torch.equal(a.isnan(), b.isnan())
                                                                 and torch.equal(a.nan_to_num(), b.nan_to_num())))
    return a == b


def _close(a: torch.Tensor, b: torch.Tensor, atol: float, rtol: float) -> bool:
    return a.shape == b.shape and bool(torch.allclose(a.double(), b.double(), atol=atol, rtol=rtol))


def _time_forward(model, inputs: list) -> tuple[float, torch.Tensor]:
    times, out, started = [], None, time.perf_counter()
    with torch.no_grad():
        while len(times) < TIMED_RUNS and (not times or time.perf_counter() - started < TIMING_BUDGET_S):
            args = [_clone(x) for x in inputs]
            t0 = time.perf_counter()
            out = model(*args)
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), out


def _determinism(namespace, torch_dtype, inputs, out, repeat, atol, rtol) -> list[str]:
    reasons = []
    if not _close(repeat, out, atol / 10, rtol / 10):
        reasons.append("nondeterministic: two runs of one model differ")
    twin = _build_model(namespace, torch_dtype)
    with torch.no_grad():
        twin_out = twin(*[_clone(x) for x in inputs])
    if not _close(twin_out, out, atol / 10, rtol / 10):
        reasons.append("nondeterministic: two models built with the same seed differ")
    return reasons


def _sensitivity(namespace, model, torch_dtype, out, atol, rtol) -> list[str]:
    inputs_b = _make_inputs(namespace, INPUT_SEED_B, torch_dtype)
    with torch.no_grad():
        out_b = model(*inputs_b)
    if isinstance(out_b, torch.Tensor) and _close(out_b, out, atol, rtol):
        return [f"output does not depend on the inputs (two input seeds agree within atol={atol:g})"]
    return []


def _trivial_outputs(out: torch.Tensor, inputs: list, atol: float, rtol: float) -> list[str]:
    reasons = []
    flat = out.reshape(-1)
    if out.numel() > 1 and bool((flat == flat[0]).all()):
        reasons.append(f"output is constant ({float(flat[0]):.4g} everywhere)")
    if _close(torch.zeros_like(out), out, atol, rtol):
        reasons.append(f"an all-zero output passes at atol={atol:g}, rtol={rtol:g}")
    elif out.numel() > 1 and out.is_floating_point() and _close(torch.full_like(out, float(out.double().mean())), out, atol, rtol):
        reasons.append(f"a constant output (the mean) passes at atol={atol:g}, rtol={rtol:g}")
    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor) and x.is_floating_point() and _close(x.to(out.dtype), out, atol, rtol):
            reasons.append(f"returning input {i} unchanged passes at atol={atol:g}, rtol={rtol:g}")
    return reasons


def round_sig(value: float, digits: int) -> float:
    """Round to ``digits`` significant digits (reference_ms is a measurement; more digits are noise)."""
    return float(f"{value:.{digits}g}")
