"""Several candidates timed together in one paired measurement (verifier.compare): each passes its own
gates first; the ones that pass are timed in the same rounds as the reference, so how much faster one
kernel is than another is a measured ratio with its own CI; one that fails is named with its reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from verifier_taskutil import make_task

from verifier.api import compare
from verifier.settings import VerifySettings

BACKENDS = Path(__file__).resolve().parents[2] / "verifier" / "backends"
TASK = (BACKENDS / "cpu_example_task.txt").read_text().replace(  # a few ms of work per call
    "batch_size = 61\nin_features = 300\nout_features = 129", "batch_size = 125\nin_features = 500\nout_features = 257")
FAST = (BACKENDS / "cpu_example_candidate.txt").read_text()
# the same kernel doing its work 16 times over: a known difference in work far beyond a loaded machine's noise
SLOW = FAST.replace("    #pragma omp parallel for collapse(2) schedule(static)\n    for (long i = 0;",
                    "    for (int rep = 0; rep < 16; ++rep)\n    #pragma omp parallel for collapse(2) schedule(static)\n"
                    "    for (long i = 0;")
WRONG = FAST.replace("acc > 0.0f ? acc : 0.0f", "acc")  # no ReLU


def test_candidates_timed_together_give_a_measured_ratio_and_failures_their_reason(tmp_path, verify_cache):
    assert SLOW != FAST and WRONG != FAST
    task = make_task(TASK, "example/linear_relu", tmp_path)
    settings = VerifySettings.for_tests(verify_cache, latency_rounds=6)
    got = compare(task, {"fast": FAST, "slow": SLOW, "wrong": WRONG}, "cpu", settings)
    assert set(got.failed) == {"wrong"} and got.failed["wrong"].startswith("correctness:"), got.failed
    assert set(got.latency) == {"fast", "slow"} and set(got.times) == {"reference", "fast", "slow"}
    counted = {len(t) for t in got.times.values()}  # the same rounds for every side (a disturbed one for none)
    assert len(counted) == 1 and 1 <= min(counted) <= 6, counted
    ratio = got.ratio("fast", "slow")
    assert ratio.rounds == min(counted) and ratio.ci_low <= ratio.median <= ratio.ci_high
    assert ratio.median > 4  # 16x the work, measured side by side
    back = got.ratio("slow", "fast")
    assert back.median == pytest.approx(1 / ratio.median)
    assert got.latency["fast"].speedup == pytest.approx(got.ratio("fast", "reference").median)


def test_compare_needs_named_candidates(tmp_path, verify_cache):
    task = make_task(TASK, "example/linear_relu", tmp_path)
    with pytest.raises(ValueError, match="at least one candidate"):
        compare(task, {}, "cpu", VerifySettings.for_tests(verify_cache))
    with pytest.raises(ValueError, match="none named 'reference'"):
        compare(task, {"reference": FAST}, "cpu", VerifySettings.for_tests(verify_cache))
