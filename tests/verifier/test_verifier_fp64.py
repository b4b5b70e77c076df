"""The float64 reference check (verifier.gates.fp64_check): the rule on real rounding, the typed
message that carries it, and the real verifier on tasks where the float64 model runs or cannot.

Fixture kernels through the real verifier (tests/fixtures/kernels, run by test_verifier_corpus):
hack_a10_half_math_loose_tolerance and hack_a10_half_softmax are rejected by this check;
honest_sum_rows_partial_sums (reordered fp32 sums), honest_softmax_poly_exp (polynomial exp) and
every other honest fixture pass it.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from verifier_taskutil import FIXTURES, fixture_task, make_task

from verifier.api import verify
from verifier.gates import fp64_check
from verifier.gates.trial_data import Fp64Reference, ReferenceOutputs
from verifier.monitor.reference import _outputs
from verifier.sandbox import messages as msg
from verifier.sandbox.channel import Channel, socket_pair
from verifier.settings import VerifySettings


def _rowsums(x: np.ndarray, blocks: int) -> np.ndarray:
    """fp32 row sums in ``blocks`` partial sums (a reordering of the same fp32 arithmetic)."""
    parts = np.array_split(x, blocks, axis=1)
    return np.sum([p.sum(axis=1, dtype=np.float32) for p in parts], axis=0, dtype=np.float32)


def test_reordered_fp32_sums_pass_and_fp16_rounded_inputs_fail():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 256)).astype(np.float32)
    r = x.sum(axis=1, dtype=np.float32)
    r64 = x.astype(np.float64).sum(axis=1)
    correction = (r64 - r).astype(np.float32)
    work = x.size / r.size
    for blocks in (1, 7, 32):
        ratio, _, _ = fp64_check.ratio_to_reference(_rowsums(x, blocks), r, correction, "float32", work)
        assert ratio < 10, (blocks, ratio)
    half = x.astype(np.float16).astype(np.float32).sum(axis=1, dtype=np.float32)
    ratio, rel_c, _ = fp64_check.ratio_to_reference(half, r, correction, "float32", work)
    assert ratio > fp64_check.MAX_RATIO and rel_c > 1e-4


def test_exact_ops_use_the_one_epsilon_floor_and_non_floats_are_skipped():
    r = np.linspace(-3, 3, 1001, dtype=np.float32)
    zero = np.zeros_like(r)
    assert fp64_check.ratio_to_reference(r, r, zero, "float32")[0] == 0.0
    one_ulp = np.nextafter(r, np.float32(np.inf))
    assert fp64_check.ratio_to_reference(one_ulp, r, zero, "float32")[0] < 2
    assert fp64_check.ratio_to_reference(r + 1, r, zero, "int64") == (0.0, 0.0, 0.0)
    assert fp64_check.ratio_to_reference(zero, zero, zero, "float32") == (0.0, 0.0, 0.0)


def test_the_mismatch_names_the_ratio_and_the_dtypes():
    r = np.linspace(-3, 3, 1001, dtype=np.float32)
    half = r.astype(np.float16).astype(np.float32)
    ref = ReferenceOutputs(0, ("float32",), (r,), ({},), Fp64Reference((np.zeros_like(r),), 1.0))
    outcome = fp64_check.check_outputs((half,), ref)
    assert outcome.ratio > fp64_check.MAX_RATIO
    assert f"{outcome.ratio:.0f}x the float32 reference's own" in outcome.mismatch
    assert "at most 256x allowed" in outcome.mismatch


def test_reference_outputs_carry_the_float64_corrections_through_the_typed_message():
    out = np.arange(6, dtype=np.float32).reshape(2, 3)
    corrections = (np.full((2, 3), 1e-7, np.float32), np.zeros(0, np.float32))
    sent = msg.RefTrial(3, "check", "normal", 64, ("float32", "int64"), ({"zeros": 1.0}, {}), 12.5, "", 2,
                        (out, np.arange(2)) + corrections)
    a, b = socket_pair()
    msg.send(Channel(b), sent)
    received, _ = msg.receive(Channel(a), time.monotonic() + 5, 1 << 20, (msg.RefTrial,))
    back = _outputs(received)
    assert back.fp64.work == 12.5 and back.fp64.note == ""
    assert [c.shape for c in back.fp64.corrections] == [(2, 3), (0,)]
    np.testing.assert_array_equal(back.arrays[0], out)
    with pytest.raises(ValueError):
        _outputs(msg.RefTrial(3, "check", "normal", 64, ("float32", "int64"), ({}, {}), 1.0, "", 2, (out,)))
    a.close()
    b.close()


NO_FLOAT64 = '''"""A model whose weight is a plain tensor attribute: .double() does not reach it."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = 2.0 * torch.eye(64)

    def forward(self, x):
        return x @ self.weight


def get_inputs():
    return [torch.randn(32, 64)]


def get_init_inputs():
    return []
'''

RANDOM_REFERENCE = '''"""2x, plus zero times a random draw: the float64 copy would draw different numbers."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return 2.0 * x + 0.0 * torch.rand_like(x)


def get_inputs():
    return [torch.randn(32, 64)]


def get_init_inputs():
    return []
'''

SCALE_KERNEL = '''import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r"""
extern "C" void scale(const float* x, float* y, long n) {
    #pragma omp parallel for simd
    for (long i = 0; i < n; ++i) y[i] = 2.0f * x[i];
}
"""

lib = load_c(SOURCE, {"scale": "const float*, float*, int64"})


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.scale(x, y, x.numel())
        return y
'''


@pytest.mark.parametrize("task_source, why", [
    (NO_FLOAT64, "float64 check skipped: the float64 model raised RuntimeError"),
    (RANDOM_REFERENCE, "float64 check skipped: the reference draws random numbers in forward"),
], ids=["no-float64-run", "random-reference"])
def test_a_model_without_a_usable_float64_run_skips_the_check_and_says_why(task_source, why, tmp_path,
                                                                            verify_cache):
    task = make_task(task_source, task_id="T/no_float64", tmp_dir=tmp_path)
    verdict = verify(task, SCALE_KERNEL, "cpu", VerifySettings.for_tests(verify_cache, seed=7))
    assert verdict.passed, verdict.feedback
    correctness = next(g for g in verdict.gates if g.name == "correctness")
    assert why in correctness.detail and "worst error ratio" not in correctness.detail


def test_a_passing_verdict_reports_the_worst_float64_ratio(verify_cache):
    source = (FIXTURES / "honest_sum_rows_partial_sums.py").read_text()
    verdict = verify(fixture_task("sum_rows"), source, "cpu", VerifySettings.for_tests(verify_cache, seed=11))
    assert verdict.passed, verdict.feedback
    correctness = next(g for g in verdict.gates if g.name == "correctness")
    assert "float64 check: worst error ratio" in correctness.detail and "(limit 256x)" in correctness.detail


def test_the_float64_copy_gives_corrections_and_work_per_output_element():
    import torch

    from verifier.sandbox.fp64_reference import Fp64Model

    torch.manual_seed(0)
    model = torch.nn.Linear(64, 16).eval()
    x = torch.randn(8, 64)
    with torch.no_grad():
        out = model(x)
        exact = torch.nn.functional.linear(x.double(), model.weight.double(), model.bias.double())
    ref = Fp64Model(model).reference([x], [out])
    assert ref.note == "" and ref.work == (8 * 64 + 64 * 16 + 16) / (8 * 16)
    np.testing.assert_allclose(out.double().numpy() + ref.corrections[0], exact.numpy(), rtol=0, atol=1e-12)
    assert model.weight.dtype == torch.float32  # the task-dtype model is untouched


def test_trial_after_trial_the_float64_inputs_reuse_their_buffers_and_the_corrections_stay_exact():
    """A contiguous input is upcast into a buffer kept for its place and shape (no fresh float64 copy per
    trial); a model that works on its inputs in place still meets each trial's own values, and a strided
    input keeps its layout (converted as Tensor.to converts it)."""
    import torch

    from verifier.sandbox.fp64_reference import Fp64Model

    class InPlace(torch.nn.Module):
        def forward(self, x, xt):
            return x.mul_(2.0).add_(xt).sum(dim=1)

    wide = Fp64Model(InPlace())
    buffers = set()
    for seed in range(3):
        torch.manual_seed(seed)
        x = torch.randn(32, 16)
        xt = torch.randn(16, 32).t()  # strided: the same layout in float64
        expected = (x.double() * 2 + xt.double()).sum(dim=1)
        out = InPlace()(x.clone(), xt).float()
        ref = wide.reference([x, xt], [out])
        assert ref.note == "" and torch.equal(x, x.clone())  # the task-dtype inputs are never written
        np.testing.assert_allclose(out.double().numpy() + ref.corrections[0], expected.numpy(), rtol=0, atol=1e-12)
        upcast = wide._upcast([x, xt])
        assert not upcast[1].is_contiguous() and upcast[1].stride() == xt.stride()
        buffers.add(upcast[0].data_ptr())
    assert len(buffers) == 1


def test_a_model_too_large_to_copy_in_float64_skips_the_check(monkeypatch):
    import torch

    from verifier.sandbox import fp64_reference

    monkeypatch.setattr(fp64_reference, "MAX_COPY_BYTES", 1 << 10)
    wide = fp64_reference.Fp64Model(torch.nn.Linear(64, 16))
    result = wide.reference([torch.randn(2, 64)], [torch.zeros(2, 16)])
    assert result.corrections == () and result.note.startswith("the float64 copy of the parameters would take")
