"""Task lint: each degenerate reference is caught with its reason, under the verifier's input
distributions; trivial-only-on-rand tasks are kept and marked; the pool survives hangs and crashes."""

from __future__ import annotations

import time

import pytest
import torch

import bench_fixtures as fx
from kernelbench_npu import lint
from kernelbench_npu.lint import LintRequest, lint_all
from kernelbench_npu.lint_checks import lint_source
from kernelbench_npu.tolerance import passes, tolerances


@pytest.mark.parametrize("source, reason", [
    (fx.CONSTANT, "output is constant"),
    (fx.IGNORES_INPUT, "does not depend on them"),
    (fx.RANDOM, "nondeterministic"),
    (fx.NON_FINITE, "NaN or Inf"),
    (fx.IDENTITY_ALWAYS, "returning input 0 unchanged passes"),
    (fx.MUTATES, "modifies its inputs"),
    (fx.NOISE_MEAN, "output is rounding noise"),
])
def test_degenerate_references_are_quarantined_with_their_reason(source, reason):
    outcome = lint_source(source, "float32")
    assert outcome.status == "quarantined" and reason in outcome.reason, outcome.reason


def test_identity_on_rand_inputs_is_kept_and_marked():
    outcome = lint_source(fx.IDENTITY_ON_POSITIVE, "float32")  # ReLU on torch.rand: the identity passes
    assert outcome.status == "ok", outcome.reason
    assert "returning input 0 unchanged passes under task inputs only" in outcome.notes


@pytest.mark.parametrize("source", [fx.TINY_SOFTMAX, fx.TINY])
def test_tiny_outputs_get_an_atol_that_all_zeros_fail(source):
    outcome = lint_source(source, "float32")  # KernelBench's Softmax: |out| ~ 1e-4; x * 1e-9
    assert outcome.status == "ok", outcome.reason
    assert outcome.output_scale < 1e-2 and outcome.atol < outcome.output_scale / 100


def test_good_references_pass_with_scale_aware_tolerances():
    relu = lint_source(fx.GOOD_RELU, "float32")
    matmul = lint_source(fx.GOOD_MATMUL, "float32")
    assert relu.status == matmul.status == "ok" and relu.reason is None
    assert relu.reference_ms > 0 and relu.rtol == 1e-4 and relu.atol == matmul.atol == 1e-5


def test_fp16_variant_lints_in_fp16_with_fp16_tolerances():
    outcome = lint_source(fx.GOOD_MATMUL, "float16")
    assert outcome.status == "ok" and outcome.atol >= 1e-2
    assert 1e-2 <= outcome.rtol <= 1e-1  # raised to admit the fp16 reference's own rounding error (4x margin)


def test_tolerance_rule_is_the_verifiers():
    ref = torch.tensor([1e-6, 2e-6, 3e-6])
    atol, rtol = tolerances("float32", float(ref.abs().max()))
    assert atol == 3e-11 and not passes(torch.zeros(3), ref, atol, rtol)
    assert passes(ref * (1 + 1e-5), ref, atol, rtol)
    assert tolerances("float32", 3.2) == (1e-5, 1e-4) and tolerances("float16", 1.0) == (1e-2, 1e-2)


def test_pool_quarantines_only_the_hanging_and_crashing_tasks():
    requests = [LintRequest(key, src, "float32", f"{key}.py") for key, src in
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


def test_a_batch_norm_on_initial_statistics_says_why_it_is_trivial_here():
    outcome = lint_source(fx.problem("return self.bn(x)", init="self.bn = nn.BatchNorm1d(dim)"), "float32")
    assert outcome.status == "quarantined" and "returning input 0 unchanged passes" in outcome.reason
    assert "in eval mode its BatchNorm layer runs on initial running statistics" in outcome.reason
    assert "KernelBench runs references in training mode" in outcome.reason


def test_a_batch_of_a_few_tasks_starts_one_worker(monkeypatch):
    """A second worker's start-up (torch's import) would cost more than the tasks it takes."""
    started = []
    real_start = lint._start
    monkeypatch.setattr(lint, "_start", lambda *args: started.append(args) or real_start(*args))
    requests = [LintRequest(key, src, "float32", f"{key}.py") for key, src in [("a", fx.GOOD_RELU), ("b", fx.GOOD_MATMUL)]]
    results = lint_all(requests, task_timeout_s=60.0, workers=2, threads=1)
    assert [results[k].status for k in ("a", "b")] == ["ok", "ok"]
    assert len(started) == 1
    assert [lint.worker_count(2, n) for n in (1, 2, 3, 4, 5, 300)] == [1, 1, 1, 2, 2, 2]


def test_a_pool_keeps_its_workers_for_the_next_batch_each_request_under_its_own_memory_limit(monkeypatch):
    """A build's sizing and its lint share one worker (torch imported once per build); the same worker holds
    each request to that request's memory limit, looser or tighter than the one before."""
    started = []
    real_start = lint._start
    monkeypatch.setattr(lint, "_start", lambda *args: started.append(args) or real_start(*args))
    scratch = fx.problem("s = torch.ones(96 << 20)\nreturn torch.relu(x) + s[0] - 1.0")  # 384 MiB of scratch a call
    with lint.WorkerPool() as pool:
        loose = lint_all([LintRequest("loose", scratch, "float32", "s.py")], task_timeout_s=60.0, workers=2, threads=1,
                         memory_bytes=2 << 30, pool=pool)
        tight = lint_all([LintRequest("tight", scratch, "float32", "s.py")], task_timeout_s=60.0, workers=2, threads=1,
                         memory_bytes=64 << 20, pool=pool)
        again = lint_all([LintRequest("again", fx.GOOD_RELU, "float32", "r.py")], task_timeout_s=60.0, workers=2,
                         threads=1, memory_bytes=2 << 30, pool=pool)
    assert loose["loose"].status == "ok", loose["loose"].reason
    assert tight["tight"].status == "quarantined" and "memory" in tight["tight"].reason, tight["tight"].reason
    assert again["again"].status == "ok", again["again"].reason
    assert len(started) == 1


def test_a_build_starts_each_worker_once_for_its_sizing_and_its_lint(monkeypatch, tmp_path):
    from kernelbench_npu.build import build_benchmark

    started = []
    real_start = lint._start
    monkeypatch.setattr(lint, "_start", lambda *args: started.append(args) or real_start(*args))
    summary = build_benchmark("cpu", levels=(3,), out=tmp_path / "b", workers=2)
    assert summary.ok == 4 and len(started) == 2  # four tasks: two workers, each sizing and then linting
