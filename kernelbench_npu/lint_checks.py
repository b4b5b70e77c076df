"""Task lint: can a reference certify anything under the inputs the verifier will use?

Runs in the lint worker process (trusted problems only). The model and inputs are built by
:mod:`kernelbench_npu.instantiate` (seeded, eval mode, in the task's dtype); besides the task's own
``get_inputs()`` the reference runs under every distribution of :mod:`kernelbench_npu.distributions`
(normal, large, small, negative-only), the task's own under a second input seed too, and each
once more in float64.

A task is quarantined, with every reason found, when its reference output is not one tensor, is
non-finite on its own inputs, changes its inputs, is nondeterministic (two runs, or two models
built from one seed, differ), differs from its own float64 run by more than the tolerance (the
output is rounding noise), or when a trivial output passes the verifier's rule
(:func:`kernelbench_npu.tolerance.passes`) under *every* distribution whose reference is finite:
all zeros, a constant fill, an input returned unchanged, or one fixed tensor whatever the inputs.
A trivial output that passes under some distributions only (ReLU is the identity on
``torch.rand``'s non-negative inputs) does not quarantine the task: it is recorded in ``notes``,
and the verifier's other distributions catch it. A trivial network whose BatchNorm layers still
hold their initial running statistics says so in its reason (in eval mode they are the identity;
KernelBench runs references in training mode).

The tolerance is scale-aware (:func:`kernelbench_npu.tolerance.tolerances`) and then raised so
that the reference's own rounding error (against float64, under every distribution) passes with a
margin: rtol up to ``RTOL_CAP`` (a LayerNorm after a conv on tiny inputs amplifies float32 noise to
4e-4), atol as far as needed. An honest kernel is never rejected for noise; a kernel that returns
zeros still is. A task whose noise exceeds the cap is quarantined: its output is rounding noise.
"""

from __future__ import annotations

import copy
import statistics
import time
from dataclasses import asdict, dataclass

import torch

from kernelbench_npu.distributions import DISTRIBUTIONS, redraw_all
from kernelbench_npu.instantiate import build_model, load_module, make_inputs
from kernelbench_npu.tolerance import NOISE_MARGIN, RTOL_CAP, ceil_1sig, noise_atol, passes, relative_l2, tolerances

MODEL_SEED, INPUT_SEEDS = 0, (1, 2)
TIMED_RUNS, TIMING_BUDGET_S = 5, 1.0


@dataclass(frozen=True)
class LintOutcome:
    status: str  # "ok" | "quarantined"
    reason: str | None  # every failed check, "; "-joined
    reference_ms: float | None  # median forward time on this machine (a measurement)
    output_scale: float | None  # max |reference output| on the task's own inputs
    atol: float
    rtol: float
    notes: str | None = None  # trivial outputs that pass under some distributions only

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class _Draw:
    """The reference under one distribution (the task's own: under a second input seed too), and
    the same inputs in float64."""

    distribution: str
    inputs: list
    out: torch.Tensor
    out_b: torch.Tensor | None  # the task's own distribution under a second seed
    exact: torch.Tensor | None  # None: the model does not run in float64, or not finitely
    counted: bool  # the verifier skips trials whose reference is not finite


def lint_source(source: str, dtype: str, path: str = "<problem>") -> LintOutcome:
    """Run every check on one problem source (at the sizes it is linted at)."""
    module = load_module(source, path)
    model = build_model(module, dtype, MODEL_SEED)
    inputs = make_inputs(module, dtype, INPUT_SEEDS[0])
    pristine = [_clone(x) for x in inputs]
    out = _forward(model, inputs)
    if not isinstance(out, torch.Tensor):
        return _quarantine(f"forward returned a {type(out).__name__}, expected one tensor", dtype)
    if not _finite(out):
        return _quarantine("output has NaN or Inf on the task's own inputs", dtype)
    reasons = ["the reference modifies its inputs"] if not all(_same(a, b) for a, b in zip(inputs, pristine)) else []
    reference_ms, repeat = _time_forward(model, pristine)
    wide = _widened(model)
    draws = [_draw(module, model, wide, dtype, d) for d in DISTRIBUTIONS]
    counted = [d for d in draws if d.counted]
    scale = float(out.detach().abs().max().double()) if out.numel() else 0.0
    atol, rtol = _tolerance(dtype, scale, counted)
    reasons += _determinism(module, dtype, pristine, out, repeat, atol, rtol)
    reasons += _rounding_noise(counted, atol, rtol)
    trivial, notes = _triviality(counted, atol, rtol)
    reasons += trivial + (_initial_batch_norm_note(model) if trivial else [])
    status = "quarantined" if reasons else "ok"
    return LintOutcome(status, "; ".join(reasons) or None, round_sig(reference_ms, 3), scale, atol, rtol,
                       "; ".join(notes) or None)


def _quarantine(reason: str, dtype: str) -> LintOutcome:
    atol, rtol = tolerances(dtype, 1.0)
    return LintOutcome("quarantined", reason, None, None, atol, rtol)


def _forward(model, inputs: list):
    with torch.no_grad():
        return model(*inputs)


def _draw(module, model, wide, dtype: str, distribution: str) -> _Draw:
    outs = []
    for seed in INPUT_SEEDS[:2 if distribution == "task" else 1]:
        generator = torch.Generator().manual_seed(1000 * seed + DISTRIBUTIONS.index(distribution))
        inputs = redraw_all(make_inputs(module, dtype, seed), distribution, generator)
        outs.append((inputs, _forward(model, [_clone(x) for x in inputs])))
    inputs, out = outs[0]
    out_b = outs[1][1] if len(outs) > 1 else None
    counted = _finite(out) and (out_b is None or _finite(out_b))
    exact = _exact(wide, inputs) if counted and out.is_floating_point() else None
    return _Draw(distribution, inputs, out, out_b, exact if exact is not None and _finite(exact) else None, counted)


def _widened(model):
    """A float64 copy of the model (same dtype-rounded weights); None if it cannot be made."""
    try:
        return copy.deepcopy(model).double()
    except Exception:  # noqa: BLE001
        return None


def _exact(wide, inputs: list) -> torch.Tensor | None:
    """The reference in float64 on the same (dtype-rounded) weights and inputs."""
    if wide is None:
        return None
    try:
        out = _forward(wide, [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs])
    except Exception:  # noqa: BLE001 - an op without a float64 kernel: no noise check for this task
        return None
    return out if isinstance(out, torch.Tensor) else None


def _tolerance(dtype: str, scale: float, draws: list[_Draw]) -> tuple[float, float]:
    """Scale-aware (atol, rtol), raised so the reference's own rounding error passes with a margin."""
    atol, rtol = tolerances(dtype, scale)
    pairs = [(d.out, d.exact) for d in draws if d.exact is not None]
    noise = max((relative_l2(out, exact) for out, exact in pairs), default=0.0) * NOISE_MARGIN
    if rtol < noise <= RTOL_CAP[dtype]:
        rtol = ceil_1sig(noise)
    needed = max((noise_atol(out, exact, rtol) for out, exact in pairs), default=0.0)
    return (max(atol, ceil_1sig(needed)) if needed > 0 else atol), rtol


def _rounding_noise(draws: list[_Draw], atol: float, rtol: float) -> list[str]:
    for d in draws:
        if d.exact is not None and not passes(d.out, d.exact, atol, rtol):
            return [f"the output is rounding noise: the reference differs from its float64 run by a relative "
                    f"L2 error of {relative_l2(d.out, d.exact):.2g} > rtol {rtol:g} ({d.distribution} inputs)"]
    return []


def _triviality(draws: list[_Draw], atol: float, rtol: float) -> tuple[list[str], list[str]]:
    """(quarantine reasons, notes): trivial outputs passing under every counted draw, or some."""
    reasons, notes = [], []
    if not draws:
        return reasons, notes
    zeros_everywhere = False
    for index, (name, pairs) in enumerate(_predictors(draws[0].out, max(len(d.inputs) for d in draws))):
        if index in (1, 2) and zeros_everywhere:  # a constant, and a fixed, output is implied
            continue
        passing = [d.distribution for d in draws if _all_pass(pairs(d), atol, rtol)]
        zeros_everywhere = zeros_everywhere or (index == 0 and len(passing) == len(draws))
        if len(passing) == len(draws):
            reasons.append(f"{name(draws[0])} passes at atol={atol:g}, rtol={rtol:g} under every input distribution")
        elif passing:
            notes.append(f"{name(draws[0])} passes under {', '.join(passing)} inputs only (the other "
                         "distributions catch it)")
    return reasons, notes


def _predictors(fixed: torch.Tensor, n_inputs: int):
    """(describe(draw), pairs(draw) -> [(trivial output, reference)]) for each trivial kernel."""
    def mean_name(d):
        flat = d.out.reshape(-1)
        return f"output is constant ({float(flat[0]):.4g} everywhere): a constant fill" \
            if bool((flat == flat[0]).all()) else "a constant output (the mean)"

    def mean_pairs(d):
        if d.out.numel() > 1 and d.out.is_floating_point():
            return [(torch.full_like(d.out, float(d.out.double().mean())), d.out)]
        return []

    yield (lambda d: "an all-zero output"), (lambda d: [(torch.zeros_like(d.out), d.out)])
    yield mean_name, mean_pairs
    yield (lambda d: "one fixed output whatever the inputs (the output does not depend on them)"), \
        (lambda d: [(fixed, target) for target in (d.out, d.out_b) if target is not None and target is not fixed])
    for i in range(n_inputs):
        yield (lambda d, i=i: f"returning input {i} unchanged"), (lambda d, i=i: _input_pairs(d, i))


def _input_pairs(draw: _Draw, i: int) -> list:
    x = draw.inputs[i] if i < len(draw.inputs) else None
    if isinstance(x, torch.Tensor) and x.is_floating_point() and x.shape == draw.out.shape:
        return [(x.to(draw.out.dtype), draw.out)]
    return []


def _all_pass(pairs: list, atol: float, rtol: float) -> bool:
    return bool(pairs) and all(passes(guess, target, atol, rtol) for guess, target in pairs)


def _initial_batch_norm_note(model) -> list[str]:
    """Why a network can be trivial here and not in KernelBench: references run in eval mode, where
    a BatchNorm on its initial running statistics (mean 0, variance 1) is the identity; KernelBench
    never calls eval(), so its BatchNorm layers normalise with batch statistics."""
    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)
             and m.running_mean is not None and not bool(m.running_mean.any()) and bool((m.running_var == 1).all())]
    if not norms:
        return []
    layers = "its BatchNorm layer runs" if len(norms) == 1 else f"its {len(norms)} BatchNorm layers run"
    return [f"in eval mode {layers} on initial running statistics (mean 0, variance 1), i.e. as the identity "
            "(KernelBench runs references in training mode, on batch statistics)"]


def _determinism(module, dtype: str, inputs: list, out, repeat, atol: float, rtol: float) -> list[str]:
    reasons = []
    if not _close(repeat, out, atol / 10, rtol / 10):
        reasons.append("nondeterministic: two runs of one model differ")
    twin = build_model(module, dtype, MODEL_SEED)
    if not _close(_forward(twin, [_clone(x) for x in inputs]), out, atol / 10, rtol / 10):
        reasons.append("nondeterministic: two models built with the same seed differ")
    return reasons


def _time_forward(model, inputs: list) -> tuple[float, torch.Tensor]:
    times, out, started = [], None, time.perf_counter()
    while len(times) < TIMED_RUNS and (not times or time.perf_counter() - started < TIMING_BUDGET_S):
        args = [_clone(x) for x in inputs]
        t0 = time.perf_counter()
        out = _forward(model, args)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), out


def _finite(t) -> bool:
    return isinstance(t, torch.Tensor) and (not t.is_floating_point() or bool(torch.isfinite(t).all()))


def _clone(x):
    return x.clone() if isinstance(x, torch.Tensor) else x


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return a.shape == b.shape and bool(torch.equal(a, b) or (a.is_floating_point() and torch.equal(a.isnan(), b.isnan())
                                                                 and torch.equal(a.nan_to_num(), b.nan_to_num())))
    return a == b


def _close(a, b, atol: float, rtol: float) -> bool:
    return isinstance(a, torch.Tensor) and a.shape == b.shape and bool(torch.allclose(a.double(), b.double(), atol=atol, rtol=rtol))


def round_sig(value: float, digits: int) -> float:
    """Round to ``digits`` significant digits (reference_ms is a measurement; more digits are noise)."""
    return float(f"{value:.{digits}g}")
