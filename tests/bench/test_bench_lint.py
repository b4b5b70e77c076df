"""Task lint: each degenerate reference is caught with its reason; the pool survives hangs and crashes."""

from __future__ import annotations

import time

import pytest

import bench_fixtures as fx
from kernelbench_npu.lint import LintRequest, lint_all
from kernelbench_npu.lint_checks import lint_source


@pytest.mark.parametrize("source, reason", [
    (fx.CONSTANT, "output is constant"),
    (fx.TINY, "an all-zero output passes"),
    (fx.IGNORES_INPUT, "does not depend on the inputs"),
    (fx.RANDOM, "nondeterministic"),
    (fx.NON_FINITE, "NaN or Inf"),
    (fx.IDENTITY_ON_POSITIVE, "returning input 0 unchanged passes"),
    (fx.MUTATES, "modifies its inputs"),
])
def test_degenerate_references_are_quarantined_with_their_reason(source, reason):
    outcome = lint_source(source, "float32", time_budget_ms=10_000)
    assert outcome.status == "quarantined" and reason in outcome.reason


def test_good_references_pass_with_scale_aware_tolerances():
    relu = lint_source(fx.GOOD_RELU, "float32", time_budget_ms=10_000)
    matmul = lint_source(fx.GOOD_MATMUL, "float32", time_budget_ms=10_000)
    assert relu.status == matmul.status == "ok" and relu.reason is None
    assert relu.reference_ms > 0 and relu.rtol == 1e-4
    assert matmul.atol > relu.atol  # |matmul output| ~ 30 > |relu output| ~ 3


def test_fp16_variant_uses_fp16_tolerances():
    outcome = lint_source(fx.GOOD_MATMUL, "float16", time_budget_ms=10_000)
    assert outcome.status == "ok" and outcome.rtol == 1e-2


def test_time_budget_quarantines_slow_references():
    outcome = lint_source(fx.GOOD_MATMUL, "float32", time_budget_ms=1e-6)
    assert outcome.status == "quarantined" and "budget" in outcome.reason


def test_pool_quarantines_only_the_hanging_and_crashing_tasks():
    requests = [LintRequest(key, src, "float32", 10_000.0, f"{key}.py") for key, src in
                [("hang", fx.HANGS), ("good1", fx.GOOD_RELU), ("crash", fx.CRASHES), ("good2", fx.GOOD_MATMUL),
                 ("raises", fx.problem("raise RuntimeError('bad reference')"))]]
    started = time.monotonic()
    results = lint_all(requests, task_timeout_s=4.0, workers=2, threads=1)
    assert time.monotonic() - started < 60
    assert results["good1"].status == results["good2"].status == "ok"
    assert "timed out after 4 s" in results["hang"].reason
    assert "lint worker exited with code 3" in results["crash"].reason
    assert "reference failed: RuntimeError: bad reference" in results["raises"].reason
    assert all(r.status == "quarantined" for k, r in results.items() if not k.startswith("good"))
