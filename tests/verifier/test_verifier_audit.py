"""The random-iteration audit of the latency gate (verifier.sandbox.audit): which timed calls are
audited, the near-duplicate input, how the timer plants and keeps, and the parent's check.

Fixture kernels through the real verifier (tests/fixtures/kernels, run by test_verifier_corpus):
hack_b4_skips_timed_calls (zeros while timed), hack_b6_computes_only_when_checked (zeros unless a
dispatch mode watches), hack_b3_sampled_value_cache (stale output for a near-duplicate input) and
hack_b4_computes_for_early_storage (computes only for inputs allocated ahead of the timed loop) are
caught by the audit; every honest fixture passes it.
"""

from __future__ import annotations

import time

import numpy as np
import torch
from verifier_taskutil import TASKS

from verifier.gates.correctness import TrialChecks
from verifier.gates.latency import audit_problem
from verifier.sandbox import audit, device_io
from verifier.sandbox import inputs as inp
from verifier.sandbox import messages as msg
from verifier.sandbox.timer import Audit, time_interleaved


def test_two_audited_calls_drawn_from_the_secret_seed_base_trial_first():
    trials = audit.audit_trials(inp.plan(5))
    assert [(t.kind, t.distribution) for t in trials] == [("audit", "normal"), ("audit", "near-duplicate")]
    draws = {seed: audit.audited_calls(trials, 30, seed) for seed in range(20)}
    for calls in draws.values():
        assert len(calls) == 2 and all(0 <= c < 30 for c in calls)
        assert [t.distribution for _, t in sorted(calls.items())] == ["normal", "near-duplicate"]
    assert audit.audited_calls(trials, 30, 3) == draws[3]  # the child and a rerun agree
    assert len({tuple(c) for c in draws.values()}) > 10  # positions vary with the seed
    assert list(audit.audited_calls(trials, 1, 0)) == [0] and audit.expected_audits(1) == 1


def test_the_near_duplicate_differs_from_the_audit_base_in_a_few_elements():
    problem = inp.load_problem((TASKS / "relu.py").read_text())
    base_trial, near_trial = audit.audit_trials(inp.plan(5))
    base, near = (inp.inputs_for(problem, 1234, t)[0] for t in (base_trial, near_trial))
    changed = int((base != near).sum())
    assert base.shape == near.shape and 1 <= changed <= max(1, int(base.numel() * inp.NEAR_DUPLICATE_FRACTION))
    assert torch.equal(inp.inputs_for(problem, 1234, near_trial)[0], near)  # the reference worker's copy
    other = inp.inputs_for(problem, 99, base_trial)[0]
    assert not torch.equal(base, other)


def test_planted_values_go_into_the_calls_own_fresh_storage_and_their_outputs_are_kept():
    made: list[list] = []

    def fresh(counter: int) -> list:
        made.append([torch.full((4, 3), float(counter)), 7])
        return made[-1]

    seen: list[tuple[int, float, int]] = []

    def candidate(inputs: list):
        seen.append((inputs[0].data_ptr(), float(inputs[0][0, 0]), inputs[1]))
        return inputs[0] * 2

    def timer(fn) -> float:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start

    planted = {1: [torch.full((4, 3), -5.0), 7], 4: [torch.full((2, 2), 9.0), 8]}
    run = Audit(planted, device_io.overwrite)
    times = time_interleaved(candidate, lambda inputs: inputs[0], fresh, timer, rounds=3, calls_per_round=2,
                             warmup_calls=1, order_seed=5, audit=run)
    assert len(times.candidate_ms) == 3 and len(seen) == 1 + 6  # warm-up, then 6 timed calls
    fresh_ptrs = {m[0].data_ptr() for m in made}
    timed = seen[1:]
    assert timed[1][0] in fresh_ptrs and timed[1][1:] == (-5.0, 7)  # same shape: copied into fresh storage
    assert timed[4][0] == planted[4][0].data_ptr() and timed[4][1:] == (9.0, 8)  # shapes differ: planted as is
    assert sorted(run.kept) == [1, 4]
    assert torch.equal(run.kept[1], torch.full((4, 3), -10.0)) and torch.equal(run.kept[4], torch.full((2, 2), 18.0))


def _audit_outputs(index: int, value: float) -> msg.TrialOutputs:
    return msg.TrialOutputs(index, "audit", "normal", ("float32",), (np.full(3, value, np.float32),))


def test_the_parent_wants_every_audited_call_and_names_a_wrong_one():
    good = (_audit_outputs(8, 1.0), _audit_outputs(9, 1.0))
    assert audit_problem(good, 30, TrialChecks(2, 0)) == ""
    assert audit_problem(good[:1], 30, TrialChecks(1, 0)) == "timing report has 1 audited calls, expected 2"
    post = (msg.TrialOutputs(6, "post", "normal", ("float32",), (np.ones(3, np.float32),)), good[1])
    assert "expected 2" in audit_problem(post, 30, TrialChecks(2, 0))
    wrong = audit_problem(good, 30, TrialChecks(1, 0, "trial 9 (normal inputs), output 0: mismatch"))
    assert wrong.startswith("the output of a timed call, audited at a secret random position, is wrong")
    assert wrong.endswith("trial 9 (normal inputs), output 0: mismatch")


def test_the_timing_report_carries_the_audited_outputs_through_the_typed_message():
    post = msg.TrialOutputs(6, "post", "normal", ("float32",), (np.arange(4, dtype=np.float32),))
    sent = msg.Timing((1.0, 2.0), (1.5, 2.5), (post,), (_audit_outputs(8, 3.0), _audit_outputs(9, 4.0)))
    header, arrays = msg._ENCODERS[msg.Timing](sent)
    back = msg._DECODERS[msg.Timing.KIND](header, arrays)
    assert [t.index for t in back.post] == [6] and [t.index for t in back.audit] == [8, 9]
    np.testing.assert_array_equal(back.audit[1].arrays[0], np.full(3, 4.0, np.float32))
