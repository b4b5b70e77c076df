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
import pytest
import torch
from verifier_taskutil import FIXTURES, TASKS

from verifier.gates.correctness import Tolerance
from verifier.monitor.output_checks import SAMPLE, mismatch
from verifier.sandbox import fast_fill
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


def test_the_near_duplicate_is_the_same_every_time_it_is_drawn(monkeypatch):
    """The audit's reference output is computed once and its input drawn again among the timed calls: a
    position drawn twice for the change took either value, whichever thread wrote last (an honest sum
    reduction failed "the output of a timed call is wrong" 1 verification in 3). A fifth of the
    elements changed here, so that many positions are drawn twice."""
    monkeypatch.setattr(inp, "NEAR_DUPLICATE_FRACTION", 0.2)
    source = (TASKS / "relu.py").read_text().replace(BIG_RELU, "rows = 2048\ncols = 2048")
    problem = inp.load_problem(source)
    near_trial = [t for t in inp.plan(5) if t.kind == "audit"][1]
    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        first = inp.inputs_for(problem, 1234, near_trial)[0]
        assert all(torch.equal(first, inp.inputs_for(problem, 1234, near_trial)[0]) for _ in range(6))
    finally:
        torch.set_num_threads(previous)


TRANSPOSED = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.sum(dim=1)


def get_inputs():
    return [torch.randn(48, 32).t()]
"""
SHARED = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, xt, k):
        return x.add_(1.0) + xt.sum() + k


def get_inputs():
    x = torch.randn(64, 32)
    return [x, x.t(), 3]


def get_init_inputs():
    return []
"""


@pytest.fixture(params=["torch's generator", "the native fill"])
def trial_fill(request):
    """The trials' draws as a reference worker makes them without the native fill and with it."""
    if request.param == "torch's generator":
        return None
    path, why = fast_fill.library()
    if path is None:
        pytest.skip(f"no native fill here: {why}")
    return fast_fill.load(str(path))


def test_every_trial_is_drawn_once_and_each_copy_is_what_drawing_again_gives(trial_fill):
    """The reference worker keeps each trial's draw (inputs.TrialInputs) for the monitor's second draw
    of it: every trial's copy, probes included, is bit for bit inputs_for's, however the previous copy
    was changed in place, with the same strides and storage sharing; a draw is dropped once every
    trial built on it was served, and nothing is kept beyond the budget."""
    problem, seed = inp.load_problem(SHARED), 4321
    plan = inp.plan(5)
    kept = inp.TrialInputs(problem, seed, plan, fill=trial_fill)
    for trial in plan:
        for _ in range(2):
            got, fresh = kept.get(trial), inp.inputs_for(problem, seed, trial, trial_fill)
            assert torch.equal(got[0], fresh[0]) and got[2] == fresh[2] == 3
            assert torch.equal(got[1], fresh[1]) and got[1].stride() == fresh[1].stride()
            shared = [g[1].untyped_storage().data_ptr() == g[0].untyped_storage().data_ptr() for g in (got, fresh)]
            assert shared[0] == shared[1]
            got[0].add_(1.0)  # what the reference's forward does
    assert set(kept.kept) == {t.index for t in plan if t.kind != "perturb" and t.distribution != "near-duplicate"}
    for trial in plan:
        kept.served(trial)
    assert kept.kept == {}
    nothing = inp.TrialInputs(problem, seed, plan, budget=64 * 32 * 4 - 1, fill=trial_fill)
    assert torch.equal(nothing.get(plan[0])[0], inp.inputs_for(problem, seed, plan[0], trial_fill)[0])
    assert nothing.kept == {}
    base = [t for t in plan if t.kind == "audit"][0]
    kept = inp.TrialInputs(problem, seed, plan, fill=trial_fill)
    kept.get(base)
    kept.served(base)  # the near-duplicate still needs its base
    assert base.index in kept.kept


def test_the_probes_change_a_transposed_input_in_place_as_they_change_its_contiguous_copy():
    """A task whose get_inputs() returns a transposed tensor (no flat view) has its perturbation probe and its
    near-duplicate audit made in place, at the same positions in row-major order as for a contiguous input:
    the reference worker used to fail on it ('view size is not compatible'), and every verification with it."""
    problem, seed = inp.load_problem(TRANSPOSED), 4321
    for trial in inp.plan(5):
        if trial.kind == "perturb" or trial.distribution == "near-duplicate":
            base = inp.inputs_for(problem, seed, inp.Trial(0, "check", inp.DISTRIBUTIONS[0]) if trial.kind == "perturb"
                                  else inp.Trial(trial.index - 1, trial.kind, inp.TIMED))[0]
            strided = base.clone().t().contiguous().t()  # the same values, the transposed layout
            assert not strided.is_contiguous()
            storage = strided.untyped_storage().data_ptr()
            dense = base.contiguous()
            change = inp.perturb_in_place if trial.kind == "perturb" else (
                lambda xs, s: inp.shuffle_some(xs, s, inp.NEAR_DUPLICATE_FRACTION, "near-duplicate"))
            change([strided], seed)
            change([dense], seed)
            assert strided.untyped_storage().data_ptr() == storage and torch.equal(strided, dense)
            assert not torch.equal(strided, base)
            assert torch.equal(inp.inputs_for(problem, seed, trial)[0], dense)


def test_the_monitors_draw_of_a_trial_hands_over_the_kept_draw_once_no_other_trial_needs_it(trial_fill):
    """take (the reference worker's Draw of a trial for the monitor) gives what inputs_for gives; the last
    trial built on a kept draw gets that draw itself, not a copy, and it is no longer kept; one that another
    trial still needs is copied, so the one after it still meets the draw as made."""
    problem, seed = inp.load_problem(SHARED), 4321
    plan = inp.plan(5)
    kept = inp.TrialInputs(problem, seed, plan, fill=trial_fill)
    for trial in plan:  # the trial phase: every draw made and kept
        kept.get(trial)[0].add_(1.0)
    base = next(t for t in plan if t.kind == "audit")
    near = next(t for t in plan if t.distribution == "near-duplicate")
    stored = kept.kept[base.index]
    first = kept.take(base)  # the near-duplicate still needs the draw: a copy
    assert first[0].data_ptr() != stored[0].data_ptr() and kept.kept[base.index] is stored
    assert torch.equal(first[0], inp.inputs_for(problem, seed, base, trial_fill)[0])
    first[0].add_(1.0)
    second = kept.take(near)  # the last one built on it: the kept draw itself, shuffled in place
    assert second[0].data_ptr() == stored[0].data_ptr() and base.index not in kept.kept
    for trial in plan:
        if trial not in (base, near):
            got = kept.take(trial)
            fresh = inp.inputs_for(problem, seed, trial, trial_fill)
            assert torch.equal(got[0], fresh[0]) and torch.equal(got[1], fresh[1]) and got[2] == fresh[2]
    assert torch.equal(second[0], inp.inputs_for(problem, seed, near, trial_fill)[0])
    assert kept.kept == {}


# A thread the candidate leaves behind, started in ModelNew's constructor (so it is part of the runner's
# baseline, never "extra"): it spins in user space, or inside one long system call at a time (faulting
# in fresh pages with MADV_POPULATE_WRITE, which SIGSTOP does not interrupt). The static policy would
# refuse the thread; the checks that would are switched off so that the timing itself is what is tested.
SPINNER = r'''
import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r"""
#include <atomic>
#include <sys/mman.h>
#include <thread>
static std::atomic<long> sink{0};
static void spin(int kernel_side) {
    for (;;) {
        if (kernel_side) {
            size_t size = 1ul << 30;
            void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p != MAP_FAILED) { madvise(p, size, 23 /* MADV_POPULATE_WRITE */); munmap(p, size); }
        } else {
            sink.fetch_add(1, std::memory_order_relaxed);
        }
    }
}
extern "C" void start(long kernel_side) { std::thread(spin, (int)kernel_side).detach(); }
extern "C" void relu(const float* x, float* y, long n) {
    #pragma omp parallel for simd schedule(static)
    for (long i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
"""

lib = load_c(SOURCE, {"start": "int64", "relu": "const float*, float*, int64"})


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        lib.start(KERNEL_SIDE)

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.relu(x, y, x.numel())
        return y
'''
SPINNER_CHECKS = ("c_threads", "c_processes_and_signals", "c_files_and_network", "c_undefined_symbols",
                  "c_includes")
BIG_RELU = "rows = 37\ncols = 129"


def _relu_task(tmp_path):
    from verifier_taskutil import make_task

    source = (TASKS / "relu.py").read_text().replace(BIG_RELU, "rows = 1024\ncols = 1024")
    return make_task(source, "fixture/relu_1m", tmp_path)


def test_a_thread_spinning_in_system_calls_while_stopped_is_seen_and_refused(tmp_path, verify_cache):
    from verifier.api import verify
    from verifier.settings import VerifySettings

    settings = VerifySettings.for_tests(verify_cache, disabled_checks=SPINNER_CHECKS, latency_rounds=5)
    verdict = verify(_relu_task(tmp_path), SPINNER.replace("KERNEL_SIDE", "1"), "cpu", settings)
    assert verdict.failed_gate == "hack", verdict.feedback
    assert "used CPU while it was stopped" in verdict.gate("hack").reason


def test_a_thread_spinning_in_user_space_is_stopped_with_its_process_and_gains_nothing(tmp_path, verify_cache):
    from verifier.api import verify
    from verifier.settings import VerifySettings

    # windows of ~20 calls: the test settings' 2 ms windows (one or two calls) read the same honest kernel
    # at 1.3x-2.0x from one verification to the next, too coarse to tell a gain of 5%
    settings = VerifySettings.for_tests(verify_cache, disabled_checks=SPINNER_CHECKS, latency_rounds=10,
                                        window_ms=20.0)
    task = _relu_task(tmp_path)
    spinning = verify(task, SPINNER.replace("KERNEL_SIDE", "0"), "cpu", settings)
    assert spinning.passed, spinning.feedback
    honest = verify(task, (FIXTURES / "honest_relu_omp.py").read_text(), "cpu", settings)
    assert honest.passed, honest.feedback
    # every window's fixed cost, taken off its calls, was measured by the reference's empty windows
    assert 0.0 < honest.latency.window_fixed_ms < 20.0, honest.latency
    # and what a window's first call took beyond the rest (its threads woken), by the reference's own clock
    assert 0.0 <= honest.latency.window_cold_ms < 5.0, honest.latency
    if not honest.latency.trusted:  # a figure the verifier itself does not stand behind compares nothing
        pytest.skip(f"the machine was too busy to compare speeds: {honest.latency.untrusted_reason}")
    # stopped while the reference is timed, it only competes with its own kernel: never faster than honest,
    # whether its figure is trusted or not (its thread waiting behind its own two may leave it untrusted)
    assert spinning.latency.speedup <= honest.latency.speedup * 1.05, (spinning.latency, honest.latency)


def test_a_collect_longer_than_the_references_is_charged_to_the_candidates_calls():
    from types import SimpleNamespace

    from verifier.gates.latency import WindowFacts, summarise, PairedTimes
    from verifier.monitor.ledger import TurnAccount
    from verifier.monitor.rounds import Turn
    from verifier.monitor.timing import TimingPlan, _measurement

    def rounds(ref_collect_ms: float, cand_collect_ms: float, n: int = 6) -> list[list[Turn]]:
        def turn(side: int, collect_ms: float) -> Turn:  # 40 calls in a 10 ms window, then the collect
            account = TurnAccount(0, 0, (0, 0), 0, int(collect_ms * 1e6))
            return Turn(side, SimpleNamespace(ns=10_000_000, calls=40, outputs=()), account)
        return [[turn(0, ref_collect_ms + 0.05 * k), turn(1, cand_collect_ms + 0.05 * k)] for k in range(n)]

    plan = TimingPlan(6, 40.0, 256, 1, 6, 500, 50.0)
    sides = [SimpleNamespace(trusted=True), SimpleNamespace(trusted=False)]
    honest = _measurement(rounds(12.0, 12.25), [], sides, 40, [], "raised", plan, 0.0)
    assert honest.late_ms == (0.0, 0.0) and honest.times[1] == honest.times[0]  # within 0.1 ms + 2% of 10 ms: noise
    moved = _measurement(rounds(12.0, 21.0), [], sides, 40, [], "raised", plan, 0.0)  # 9 ms of work in Collect
    assert moved.late_ms[1] == pytest.approx(9.0 - 0.1 - 0.02 * 10.0, abs=1e-6)
    assert moved.times[1][0] == pytest.approx(0.25 + moved.late_ms[1] / 40)  # a third more per call
    assert _measurement(rounds(12.0, 21.0, n=2), [], sides, 40, [], "raised", plan, 0.0).late_ms == (0.0, 0.0)
    result = summarise(PairedTimes(moved.times[1], moved.times[0]), 500, 50.0, facts=moved.facts())
    assert result.speedup == pytest.approx(0.25 / (0.25 + moved.late_ms[1] / 40)) and result.late_ms == moved.late_ms[1]
    assert "longer than the reference's: counted as its time" in result.note
    assert summarise(PairedTimes((1.0,) * 3, (1.0,) * 3), 500, 50.0, facts=WindowFacts()).note == ""


def test_what_a_candidate_computed_before_its_clock_is_charged_to_that_rounds_window():
    from types import SimpleNamespace

    from verifier.gates.latency import PairedTimes, summarise
    from verifier.monitor.ledger import TurnAccount
    from verifier.monitor.rounds import Turn
    from verifier.monitor.timing import TimingPlan, _measurement

    def rounds(settle_ms: list[float]) -> list[list[Turn]]:
        def turn(side: int, work_ms: float) -> Turn:  # 40 calls in a 10 ms window
            return Turn(side, SimpleNamespace(ns=10_000_000, calls=40, outputs=()), TurnAccount(0, 0, (0, 0), 0, 0),
                        settle_work_ns=int(work_ms * 1e6))
        return [[turn(0, 0.0), turn(1, work)] for work in settle_ms]

    plan = TimingPlan(6, 40.0, 256, 1, 6, 500, 50.0)
    sides = [SimpleNamespace(trusted=True), SimpleNamespace(trusted=False)]
    waiting = _measurement(rounds([0.0, 0.1, 0.25, 0.0, 0.3, 0.0]), [], sides, 40, [], "raised", plan, 0.0)
    assert waiting.early_ms == (0.0, 0.0) and waiting.times[1] == waiting.times[0]  # within 0.1 ms + 2% of 10 ms
    some = _measurement(rounds([5.3, 0.0, 5.3, 0.0, 0.0, 0.0]), [], sides, 40, [], "raised", plan, 0.0)
    charged = 5.3 - 0.1 - 0.02 * 10.0  # in the two rounds it worked in, and only there
    assert some.times[1] == pytest.approx((0.25 + charged / 40, 0.25, 0.25 + charged / 40, 0.25, 0.25, 0.25))
    assert some.early_ms[1] == pytest.approx(2 * charged / 6)
    every = _measurement(rounds([5.3] * 6), [], sides, 40, [], "raised", plan, 0.0)
    result = summarise(PairedTimes(every.times[1], every.times[0]), 500, 50.0, facts=every.facts())
    assert result.speedup == pytest.approx(0.25 / (0.25 + charged / 40)) and result.early_ms == pytest.approx(charged)
    assert "before its clock started, with the window's inputs already in place: counted as its time" in result.note


def _collects(ref_ms: list[float], cand_ms: list[float]):
    from types import SimpleNamespace

    from verifier.monitor.ledger import TurnAccount
    from verifier.monitor.rounds import Turn

    def turn(side, ms):
        account = TurnAccount(0, 0, (0, 0), 0, int(ms * 1e6))
        return Turn(side, SimpleNamespace(ns=0, outputs=()), account)

    sides = [SimpleNamespace(trusted=True), SimpleNamespace(trusted=False)]
    return [[turn(0, r), turn(1, c)] for r, c in zip(ref_ms, cand_ms)], sides


def _paired(ref_ms: list[float], cand_ms: list[float]):
    from types import SimpleNamespace

    from verifier.monitor.ledger import TurnAccount
    from verifier.monitor.rounds import Turn

    def turn(side, ms):
        return Turn(side, SimpleNamespace(ns=int(ms * 1e6), calls=1, outputs=()), TurnAccount(0, 0, (0, 0), 0, 0))

    return [[turn(0, r), turn(1, c)] for r, c in zip(ref_ms, cand_ms)]


def test_the_latency_rounds_end_early_only_once_the_speedup_is_known_to_the_plans_precision():
    from dataclasses import replace

    from verifier.monitor.early_end import ends_early, settled
    from verifier.monitor.timing import TimingPlan

    plan = TimingPlan(16, 40.0, 256, 1, 16, 1000, 50.0, settle_rounds=8, settle_ci=0.025)
    steady = _paired([2.0 + 0.01 * (k % 3) for k in range(8)], [1.0] * 8)
    noisy = _paired([2.0, 2.6, 1.5, 2.2, 1.7, 2.9, 1.4, 2.4], [1.0] * 8)
    assert settled(steady, [None, None], plan, np.random.default_rng(0))
    assert not settled(noisy, [None, None], plan, np.random.default_rng(0))
    assert not settled(steady, [None, None], replace(plan, settle_ci=0.0), np.random.default_rng(0))
    # the rounds certain to play (the audits and the observed rounds are placed among them)
    assert plan.sure_rounds == 8 and replace(plan, settle_rounds=0).sure_rounds == 16
    assert replace(plan, settle_ci=0.0).sure_rounds == 16 and replace(plan, rounds=5).sure_rounds == 5
    # a candidate seen using CPU while stopped meets every round: no early end once one round showed it
    assert ends_early(steady, 0, [None, None], plan, np.random.default_rng(0), 8)
    assert not ends_early(steady, 1, [None, None], plan, np.random.default_rng(0), 8)
    assert not ends_early(steady[:7], 0, [None, None], plan, np.random.default_rng(0), 8)  # before the sure rounds


def test_a_verification_of_a_steady_kernel_ends_its_latency_rounds_early(tmp_path, verify_cache):
    from verifier.api import verify
    from verifier.settings import VerifySettings

    settings = VerifySettings.for_tests(verify_cache, latency_rounds=9, settle_rounds=5, settle_ci=10.0)
    verdict = verify(_relu_task(tmp_path), (FIXTURES / "honest_relu_omp.py").read_text(), "cpu", settings)
    assert verdict.passed, verdict.feedback
    if not verdict.latency.trusted:  # disturbed rounds are played again, never counted: nothing settles early
        pytest.skip(f"the machine was too busy to count undisturbed rounds: {verdict.latency.untrusted_reason}")
    assert verdict.latency.rounds == 5, verdict.latency  # settled at once: 5 of 9
    with pytest.raises(ValueError, match="settle_rounds"):
        VerifySettings(settle_ci=-1.0)


def test_late_work_is_judged_on_paired_rounds_and_never_on_one():
    from verifier.monitor.correctness_phase import IntegrityProblem
    from verifier.monitor.late_work import late_work as _late_work

    _late_work(*_collects([0.0], [1.01]))  # one round (CI, under load): the machine's noise, no judgement
    _late_work(*_collects([1.2, 0.1, 1.5, 1.3], [1.4, 1.3, 1.7, 1.4]))  # the same copy, load on one round
    # stalls in two of three rounds (CI, four verifications on two cores: an honest GELU's median excess 5.15 ms)
    _late_work(*_collects([1.35, 1.3, 1.4], [6.5, 1.5, 7.0]))
    with pytest.raises(IntegrityProblem, match="work continued after forward returned"):
        _late_work(*_collects([1.2, 1.1, 1.3, 1.2], [9.0, 8.5, 9.3, 9.1]))  # 8 ms of work left running


def test_windows_are_sized_from_the_fastest_call_and_again_after_the_warm_up():
    from verifier.monitor.ledger import TurnAccount
    from verifier.monitor.peers import Answer
    from verifier.monitor.rounds import Layout, Turn
    from verifier.monitor.window_size import calls_per_window, regrow

    def turn(calls: int, ms: float) -> Turn:
        return Turn(0, Answer((), (), int(ms * 1e6), calls, calls=calls), TurnAccount(0, 0, (0,), 0, 0))

    cold = [turn(1, 2.5), turn(1, 1.5)]  # one call alone: fresh pages, cold caches
    calls = calls_per_window(cold, 40.0, 200)
    assert calls == 27
    layout = Layout(calls, 4096, 200 * 4096)
    warm = [turn(calls, 27 * 0.3), turn(calls, 27 * 0.5)]
    assert regrow(layout, warm, 40.0, 200) == Layout(134, 4096, 200 * 4096)  # the arena's room stays
    assert regrow(layout, warm, 40.0, 100).calls == 100  # never past the room the arenas were made for
    assert regrow(layout, [turn(calls, 27 * 3.0)], 40.0, 200) == layout  # never smaller


def test_windows_hold_fewer_calls_where_drawing_their_inputs_would_dominate_but_never_below_the_shortest():
    from verifier.monitor.ledger import TurnAccount
    from verifier.monitor.peers import Answer
    from verifier.monitor.rounds import Turn
    from verifier.monitor.window_size import calls_per_window

    def turn(calls: int, ms: float) -> Turn:
        return Turn(0, Answer((), (), int(ms * 1e6), calls, calls=calls), TurnAccount(0, 0, (0,), 0, 0))

    fast = [turn(10, 10 * 0.25)]  # a ReLU: 0.25 ms a call
    sizing = dict(shortest_ms=10.0, draw_budget_ms=60.0)
    assert calls_per_window(fast, 40.0, 256, 0.0, **sizing) == 160  # drawing not measured: the window fills
    assert calls_per_window(fast, 40.0, 256, 0.3, **sizing) == 160  # cheap inputs: 48 ms of drawing a round
    assert calls_per_window(fast, 40.0, 256, 1.0, **sizing) == 60  # 60 ms of drawing: a 15 ms window
    assert calls_per_window(fast, 40.0, 256, 50.0, **sizing) == 40  # costly inputs: still a 10 ms window
    assert calls_per_window(fast, 5.0, 256, 50.0, **sizing) == 20  # never longer than window_ms asks
    slow = [turn(1, 12.0)]  # a call longer than the shortest window: one call, whatever its inputs cost
    assert calls_per_window(slow, 40.0, 256, 50.0, **sizing) == 1


def test_windows_are_sized_from_calls_less_the_fixed_cost():
    from dataclasses import replace

    from verifier.monitor.ledger import TurnAccount
    from verifier.monitor.peers import Answer
    from verifier.monitor.rounds import Turn
    from verifier.monitor.window_size import calls_per_window

    lone = Turn(0, Answer((), (), 400_000, 1, calls=1), TurnAccount(0, 0, (0,), 0, 0))  # 0.1 ms + 0.3 ms fixed
    assert calls_per_window([lone], 10.0, 256) == 25  # the fixed cost unknown: a quarter of the window
    assert calls_per_window([replace(lone, empty_ns=300_000)], 10.0, 256) == 100


def test_a_windows_first_call_excess_is_what_it_took_beyond_the_median_call():
    from verifier.sandbox.serve import first_call_excess

    assert first_call_excess([0, 500, 600, 700, 800]) == 400  # 500 against 100, 100, 100
    assert first_call_excess([0, 100, 250, 350, 450]) == 0  # a first call faster than the rest: nothing
    assert first_call_excess([0, 900, 1000]) == 0  # two calls: no median of the others to speak of


def test_only_the_reference_workers_first_call_excess_is_taken_off_and_from_every_side_alike():
    """The record side (the trusted reference worker) says what its windows' first calls took beyond their
    median call; the median of that is taken off every side's windows, as the fixed cost is. A runner's
    figure is never read: a candidate that claims a huge excess gains nothing by it."""
    from verifier.monitor.ledger import TurnAccount
    from verifier.monitor.peers import Answer
    from verifier.monitor.rounds import Turn
    from verifier.monitor.timing import TimingPlan, _measurement
    from verifier.monitor.window_size import cold_cost
    from types import SimpleNamespace

    def turn(side: int, ns: int, excess: int, calls: int = 40) -> Turn:
        return Turn(side, Answer((), (), ns, calls, calls=calls, first_call_excess_ns=excess),
                    TurnAccount(0, 0, (0, 0), 0, 0))

    rounds = [[turn(0, 10_200_000, 200_000 + 10_000 * k), turn(1, 5_200_000, 9_000_000)] for k in range(5)]
    assert cold_cost([t for r in rounds for t in r]) == 220_000  # the reference's median; the runner's 9 ms ignored
    assert cold_cost([turn(0, 900_000, 500_000, calls=2)]) == 0.0  # windows of fewer than three calls say nothing
    plan = TimingPlan(5, 40.0, 256, 1, 5, 500, 50.0)
    sides = [SimpleNamespace(trusted=True), SimpleNamespace(trusted=False)]
    measured = _measurement(rounds, [], sides, 40, [], "raised", plan, 0.0, cold_cost([t for r in rounds for t in r]))
    assert measured.times[0][0] == pytest.approx((10_200_000 - 220_000) / 40 / 1e6)
    assert measured.times[1][0] == pytest.approx((5_200_000 - 220_000) / 40 / 1e6)
    assert measured.facts().cold_ms == pytest.approx(0.22)


def test_a_windows_fixed_cost_is_taken_off_its_calls_never_below_a_tenth_of_it():
    from verifier.monitor.ledger import TurnAccount
    from verifier.monitor.peers import Answer
    from verifier.monitor.rounds import Turn

    turn = Turn(0, Answer((), (), 4_330_000, 10, calls=10), TurnAccount(0, 0, (0,), 0, 0))
    assert turn.ms_per_call == pytest.approx(0.433)
    assert turn.ms_per_call_less(330_000) == pytest.approx(0.4)  # 0.33 ms of protocol, 4 ms of kernel
    assert turn.ms_per_call_less(9_000_000) == pytest.approx(0.0433)  # a bogus floor cannot zero a window


class _WarmRounds:
    """Rounds that play windows faulting the given page counts, one round after another."""

    def __init__(self, faults: list[int], calls: int = 10, ms_per_call: float = 0.5) -> None:
        from verifier.monitor.rounds import Layout

        self.faults, self.played = list(faults), 0
        self.layout, self.draw_ms, self.ms = Layout(calls, 4096, 4096 * 256), [0.0], ms_per_call

    def can_replay(self, calls):
        return True

    def play(self, items, order, device, observe=False, check=None, again=False):
        from verifier.monitor.ledger import TurnAccount
        from verifier.monitor.peers import Answer
        from verifier.monitor.rounds import Turn

        faults = self.faults[min(self.played, len(self.faults) - 1)]
        self.played += 1
        calls = self.layout.calls
        return [Turn(i, Answer((), (), int(calls * self.ms * 1e6), calls, calls=calls), TurnAccount(0, 0, (0,), 0, 0),
                     observed="", faults=faults) for i in order]


def _warm_up(rounds: _WarmRounds, warmup_rounds: int = 1, window_ms: float = 5.0) -> int:
    import random

    import numpy as np

    from verifier.monitor import timing

    plan = timing.TimingPlan(10, window_ms, 256, warmup_rounds, 10, 500, 1000.0)
    timing._warm_up(rounds, [None, None], timing._Counter(), random.Random(0), None, np.random.default_rng(0), False,
                    plan, 256)
    return rounds.played


def test_the_warm_up_lasts_until_no_window_faults_pages_in_and_no_longer_than_its_bound():
    from verifier.monitor.timing import WARM_UP_MOST

    assert _warm_up(_WarmRounds([0])) == 1  # steady from the start: the warm-up round asked for
    assert _warm_up(_WarmRounds([0]), warmup_rounds=3) == 3
    assert _warm_up(_WarmRounds([4608, 4608, 2, 4608])) == 3  # the heap settled in the third round (a stray page)
    assert _warm_up(_WarmRounds([4608])) == WARM_UP_MOST  # outputs mapped afresh on every call: bounded
    assert _warm_up(_WarmRounds([0]), warmup_rounds=0) == 0  # switched off (quick settings)


def test_a_window_grown_after_the_warm_up_warms_up_again():
    rounds = _WarmRounds([0], calls=2, ms_per_call=0.5)  # sized from a cold call: 2 calls of a 0.5 ms kernel
    assert _warm_up(rounds, window_ms=5.0) == 2  # regrown to 10 calls, then one round at that size
    assert rounds.layout.calls == 10


def test_trials_drawn_with_the_native_fill_keep_each_distribution_and_the_task_s_integers(trial_fill):
    """With the fill the task's random calls and the redraws' normals come from it (other values than torch's
    generator gives), in the same distributions: the task's own draw, standard normals scaled or folded
    negative; a tensor the task draws from integers keeps them, and the same trial draws the same values."""
    source = ("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def forward(self, x, t):\n"
              "        return x[t]\n\n\ndef get_inputs():\n    return [torch.rand(256, 64), torch.randint(0, 256, (32,))]\n\n\n"
              "def get_init_inputs():\n    return []\n")
    problem, seed = inp.load_problem(source), 77
    by_kind = {t.distribution: t for t in inp.plan(5) if t.kind == "check"}
    drawn = {d: inp.inputs_for(problem, seed, t, trial_fill) for d, t in by_kind.items()}
    task_x, task_t = drawn["task"]
    assert 0.0 <= float(task_x.min()) and float(task_x.max()) < 1.0 and abs(float(task_x.mean()) - 0.5) < 0.02
    for distribution, scale in (("normal", 1.0), ("large", 1e3), ("small", 1e-3)):
        x = drawn[distribution][0]
        assert abs(float(x.std()) / scale - 1.0) < 0.05 and abs(float(x.mean())) < 0.05 * scale, distribution
    assert float(drawn["negative"][0].max()) <= -1e-3
    for x, t in drawn.values():
        assert t.dtype == torch.int64 and 0 <= int(t.min()) and int(t.max()) < 256
    again = inp.inputs_for(problem, seed, by_kind["large"], trial_fill)
    assert torch.equal(again[0], drawn["large"][0]) and torch.equal(again[1], drawn["large"][1])
    if trial_fill is not None:
        plain = inp.inputs_for(problem, seed, by_kind["large"])
        assert not torch.equal(plain[0], drawn["large"][0])  # the fill drew them, not torch's generator
