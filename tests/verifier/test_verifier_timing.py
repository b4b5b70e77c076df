"""The monitor's timing (verifier.monitor.timing): every timed output checked against the reference's
output for the same inputs, on a sample of elements or in full; the audit trials' inputs.

Through the real verifier (tests/fixtures/kernels, run by test_verifier_corpus): a kernel that skips
work while timed (hack_b4_skips_timed_calls), drifts after a number of calls (hack_b4_call_count_drift),
answers a near-duplicate input from a sampled-value cache (hack_b3_sampled_value_cache) or computes
only for inputs allocated ahead of the timed loop (hack_b4_computes_for_early_storage) is caught; every
honest fixture passes; an attack on a timer in the runner gains nothing (moot_c4_timer_patch_runtime).
"""

from __future__ import annotations

import numpy as np
import torch
from verifier_taskutil import TASKS

from verifier.gates.correctness import Tolerance
from verifier.monitor.timing import SAMPLE, mismatch
from verifier.sandbox import inputs as inp

TOL = Tolerance(1e-4, 1e-4, 0.01)


def test_a_full_check_finds_one_wrong_element_and_a_sample_finds_widespread_ones():
    ref = np.linspace(-1, 1, 100_000, dtype=np.float32)
    one_off = ref.copy()
    one_off[77_777] += 1.0
    assert mismatch((one_off,), (ref,), TOL, None).startswith("output 0: expected")
    assert mismatch((ref,), (ref,), TOL, np.random.default_rng(0)) == ""
    skipped = ref.copy()
    skipped[::2] = 0.0  # half the work skipped
    assert mismatch((skipped,), (ref,), TOL, np.random.default_rng(1)) != ""
    assert SAMPLE < ref.size


def test_shapes_counts_and_nonfinite_references():
    ref = np.array([np.inf, 1.0], dtype=np.float32)
    assert mismatch((np.array([5.0, 1.0], np.float32),), (ref,), TOL, None) == ""  # inf: nothing to compare there
    assert "shape" in mismatch((np.ones(3, np.float32),), (ref,), TOL, None)
    assert "outputs" in mismatch((), (ref,), TOL, None)


def test_the_near_duplicate_differs_from_the_audit_base_in_a_few_elements():
    problem = inp.load_problem((TASKS / "relu.py").read_text())
    base_trial, near_trial = [t for t in inp.plan(5) if t.kind == "audit"]
    base, near = (inp.inputs_for(problem, 1234, t)[0] for t in (base_trial, near_trial))
    changed = int((base != near).sum())
    assert base.shape == near.shape and 1 <= changed <= max(1, int(base.numel() * inp.NEAR_DUPLICATE_FRACTION))
    assert torch.equal(inp.inputs_for(problem, 1234, near_trial)[0], near)
    assert not torch.equal(base, inp.inputs_for(problem, 99, base_trial)[0])
