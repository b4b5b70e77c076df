"""Task state: stages, start points, best tracking and budgets, and the method policies."""

from __future__ import annotations

from dataclasses import replace

import pytest

from evokernel.agent.methods import METHODS, method_policy
from evokernel.agent.rewards import PairedSpeedup
from evokernel.agent.state import StepOutcome, TaskState, replay

EVO = method_policy("evokernel")


def outcome(iteration, feasible, ms=None, stage=1, tokens=100, seconds=1.0):
    return StepOutcome(
        attempt_id=f"c/t/{iteration:03d}", task_id="t", iteration=iteration, stage=stage, feasible=feasible,
        failed_gate=None if feasible else "correctness", candidate_ms=ms, speedup=(2.0 / ms) if ms else None,
        reward=1.0 if feasible else -1.0, reward_normalized=0.0, feedback=f"fb {iteration}",
        trace_item_id=f"trace/c/t/{iteration:03d}", code="code", tokens=tokens, seconds=seconds,
    )


def test_stage_switches_to_refining_after_first_feasible_kernel():
    state = TaskState("t")
    assert state.stage(EVO) == 1
    state = state.after(outcome(0, False), EVO)
    assert state.stage(EVO) == 1 and not state.start_points
    state = state.after(outcome(1, True, ms=2.0), EVO)
    assert state.stage(EVO) == 2
    assert state.first_feasible_iteration == 1
    assert state.best_ms == 2.0 and state.best_item_id == "trace/c/t/001"


def test_start_points_grow_and_best_is_tracked():
    state = TaskState("t")
    for i, ms in enumerate([3.0, 2.0, 2.5, 1.0]):
        state = state.after(outcome(i, True, ms=ms, stage=2 if i else 1), EVO)
    assert len(state.start_points) == 4
    assert state.best_ms == 1.0 and state.best_item_id == "trace/c/t/003"
    state = state.after(outcome(4, False, stage=2), EVO)
    assert len(state.start_points) == 4 and state.best_ms == 1.0


def test_pass_at_k_never_refines():
    state = TaskState("t").after(outcome(0, True, ms=1.0), METHODS["pass-at-k"])
    assert state.stage(METHODS["pass-at-k"]) == 1
    assert state.last_feedback is None  # pass@k samples independently: no feedback carried


def test_budgets_stop_the_task():
    state = TaskState("t")
    assert state.stop_reason(budget=2, max_tokens=1000, max_seconds=100) is None
    state = state.after(outcome(0, False, tokens=600), EVO).after(outcome(1, False, tokens=600), EVO)
    assert "iteration budget" in state.stop_reason(budget=2, max_tokens=10_000, max_seconds=100)
    assert "token budget" in state.stop_reason(budget=5, max_tokens=1000, max_seconds=100)
    assert "wall-clock" in state.stop_reason(budget=5, max_tokens=10_000, max_seconds=1.5)


def test_the_incumbent_is_the_best_paired_speedup_not_the_lowest_raw_latency():
    # iteration 1 ran while the machine was quiet (low ms), iteration 2 under load but faster than
    # the reference timed beside it: the paired speedup decides
    quiet = replace(outcome(1, True, ms=1.0, stage=2), speedup=1.2, ci_low=1.1, ci_high=1.3)
    loaded = replace(outcome(2, True, ms=3.0, stage=2), speedup=1.8, ci_low=1.7, ci_high=1.9)
    state = TaskState("t").after(outcome(0, True, ms=2.0), EVO).after(quiet, EVO).after(loaded, EVO)
    assert state.best_item_id == "trace/c/t/002" and state.best_ms == 3.0
    assert state.best == PairedSpeedup(1.8, 1.7, 1.9)


def test_replay_rebuilds_the_same_state_in_any_input_order():
    outs = [outcome(0, False), outcome(1, True, ms=2.0), outcome(2, True, ms=1.5, stage=2)]
    forward = replay("t", outs, EVO)
    backward = replay("t", list(reversed(outs)), EVO)
    assert forward == backward
    assert forward.iterations_done == 3 and forward.best_ms == 1.5


def test_unknown_method_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown method 'greedy'"):
        method_policy("greedy")


def test_the_machines_outcomes_use_the_budget_but_change_nothing_else():
    machine = replace(outcome(1, False), owner="machine", reward=None, reward_normalized=None,
                      machine_reason="reference worker crashed", trace_item_id=None, stage=2)
    state = TaskState("t").after(outcome(0, True, ms=2.0), EVO)
    after = state.after(machine, EVO)
    assert after.iterations_done == 2 and after.start_points == state.start_points
    assert after.refine_stats == state.refine_stats  # the normaliser never sees a machine outcome
    assert after.machine_streak == 1 and after.machine_reason == "reference worker crashed"
    assert after.after(outcome(2, False, stage=2), EVO).machine_streak == 0  # a judged outcome ends the streak


def test_a_task_stops_after_machine_outcomes_in_a_row_and_a_rerun_resumes_it():
    state, outs = TaskState("t"), []
    for i in range(3):
        outs.append(replace(outcome(i, False), owner="machine", reward=None, machine_reason="no g++ on PATH"))
        state = state.after(outs[-1], EVO)
    reason = state.stop_reason(budget=10, max_tokens=10**6, max_seconds=1e6)
    assert reason.startswith("the machine failed 3 verifications in a row (no g++ on PATH)") and "rerun" in reason
    assert replay("t", outs, EVO).stop_reason(budget=10, max_tokens=10**6, max_seconds=1e6) is None


def test_no_blind_refinement_a_feasible_kernel_that_cannot_be_timed_ends_the_task():
    untimed = replace(outcome(0, True), latency_unmeasurable="latency unavailable here: needs torch_npu and an NPU")
    for policy in (EVO, METHODS["pass-at-k"]):
        state = TaskState("t").after(outcome(0, False), policy).after(replace(untimed, iteration=1), policy)
        reason = state.stop_reason(budget=30, max_tokens=10**6, max_seconds=1e6)
        assert reason.startswith("feasible; latency is not measured on this machine (latency unavailable here"), reason
    failed_untimed = replace(outcome(0, False), latency_unmeasurable="latency unavailable here: x")
    assert TaskState("t").after(failed_untimed, EVO).stop_reason(30, 10**6, 1e6) is None  # no kernel yet: keep drafting


def test_an_implausible_timing_never_makes_the_best_kernel_and_ties_go_to_the_earlier_one():
    """The one definition of best (memory_lake best_kernels.sql): the highest median paired speedup among
    feasible kernels whose timing is not implausible; a noisy one counts at its median."""
    state = TaskState("t")
    state = state.after(outcome(0, True, ms=2.0), EVO)  # 1.0x
    state = state.after(replace(outcome(1, True, ms=0.1, stage=2), timing_flag="implausible"), EVO)  # 20x
    assert state.best_item_id == "trace/c/t/000" and len(state.start_points) == 2  # still a start point
    state = state.after(replace(outcome(2, True, ms=1.0, stage=2), timing_flag="noisy"), EVO)  # 2.0x
    state = state.after(replace(outcome(3, True, ms=1.0, stage=2), timing_flag="clean"), EVO)  # 2.0x, later
    assert state.best_item_id == "trace/c/t/002" and state.best.speedup == 2.0
