"""Attribution of outcomes (the candidate's or the machine's) and the score of a step, on verdicts as
the verifier makes them: only the candidate's outcomes earn rewards; the machine's carry a reason."""

from __future__ import annotations

import json

import pytest

from evokernel.agent.attribution import CANDIDATE, MACHINE, attribute, attribute_gates, gates_from_json, owner_of
from evokernel.agent.rewards import PairedSpeedup, RunningStats
from evokernel.agent.scoring import score
from verifier.gate_plan import unavailable_gate
from verifier.result import GateResult, LatencyResult, Verdict

OK = {name: GateResult(name, True, "", 0.1) for name in ("hack", "compile", "correctness", "latency")}
NO_NPU = "needs torch_npu and an NPU"


def verdict(*gates: GateResult, latency: LatencyResult | None = None, infra: str = "") -> Verdict:
    return Verdict("t", "cpu", "sha", tuple(gates), latency=latency, infrastructure_error=infra, feedback="fb")


def failed(name: str, reason: str = "mismatch") -> GateResult:
    return GateResult(name, False, reason, 0.1)


def timed(speedup: float) -> LatencyResult:
    return LatencyResult(1.0, speedup, speedup, speedup * 0.99, speedup * 1.01, 30)


@pytest.mark.parametrize("stage", [1, 2])
def test_the_machines_outcomes(stage):
    infra = attribute(verdict(infra="building ModelNew from get_init_inputs() failed: can't allocate memory\nmore"), stage)
    assert (infra.owner, infra.reason, infra.scored) == (MACHINE, "building ModelNew from get_init_inputs() failed: "
                                                                  "can't allocate memory", False)
    compile_missing = attribute(verdict(OK["hack"], unavailable_gate("compile", "no nvcc")), stage)
    assert compile_missing.owner == MACHINE and compile_missing.reason == "compile unavailable here: no nvcc"
    correctness_missing = attribute(verdict(OK["hack"], OK["compile"], unavailable_gate("correctness", "no GPU"),
                                            unavailable_gate("latency", "no GPU")), stage)
    assert correctness_missing.owner == MACHINE and correctness_missing.reason.startswith("correctness unavailable")


@pytest.mark.parametrize("stage", [1, 2])
def test_the_candidates_outcomes(stage):
    assert attribute(None, stage).owner == CANDIDATE  # no usable kernel in the answer: the model's outcome
    assert attribute(verdict(failed("hack", "torch.relu in forward")), stage).owner == CANDIDATE
    assert attribute(verdict(OK["hack"], failed("compile", "error: expected ';'")), stage).owner == CANDIDATE
    # a real failure before an unavailable gate is the candidate's (the gate it failed could run)
    wrong = attribute(verdict(OK["hack"], OK["compile"], failed("correctness")), stage)
    assert wrong.owner == CANDIDATE and wrong.latency_unmeasurable == ""
    everything = attribute(verdict(*OK.values(), latency=timed(1.2)), stage)
    assert everything.owner == CANDIDATE and everything.scored


def test_latency_unavailable_is_the_candidates_feasibility_in_drafting_and_the_machines_in_refining():
    gates = (OK["hack"], OK["compile"], OK["correctness"], unavailable_gate("latency", NO_NPU))
    draft, refine = attribute(verdict(*gates), 1), attribute(verdict(*gates), 2)
    assert draft.owner == CANDIDATE and draft.latency_unmeasurable == f"latency unavailable here: {NO_NPU}"
    assert refine.owner == MACHINE and refine.reason == f"latency unavailable here: {NO_NPU}"


def test_the_rule_reads_stored_gates_the_same_way():
    gates = (OK["hack"], OK["compile"], OK["correctness"], unavailable_gate("latency", NO_NPU))
    stored = json.dumps([{"name": g.name, "passed": g.passed, "reason": g.reason, "seconds": g.seconds} for g in gates])
    assert attribute_gates(gates_from_json(stored), 2) == attribute(verdict(*gates), 2)
    assert gates_from_json(None) == () and attribute_gates((), 1).owner == CANDIDATE
    assert owner_of({"outcome_owner": None}) == CANDIDATE  # rows written before attribution was recorded
    assert owner_of({"outcome_owner": MACHINE}) == MACHINE


def test_a_machines_outcome_scores_nothing_and_says_why():
    scored = score(2, verdict(infra="reference worker crashed (SIGKILL)"), PairedSpeedup(1.5, 1.4, 1.6),
                   RunningStats().add(-1.0).add(0.2), learns_values=True)
    columns = scored.columns()
    assert columns["outcome_owner"] == MACHINE and columns["machine_reason"] == "reference worker crashed (SIGKILL)"
    assert columns["reward"] is None and columns["reward_normalized"] is None and columns["reward_applied"] is None
    assert columns["reward_norm_count"] is None  # the normaliser never sees it
    assert "no reward, no value update" in columns["reward_rule"]


def test_draft_scores_are_applied_as_they_are():
    good = score(1, verdict(*OK.values(), latency=timed(1.0)), None, RunningStats(), learns_values=True)
    assert (good.reward, good.reward_applied, good.rule) == (1.0, 1.0, "draft: feasible -> +1, applied as is")
    bad = score(1, verdict(failed("hack")), None, RunningStats(), learns_values=True)
    assert (bad.reward, bad.reward_applied) == (-1.0, -1.0) and "failed at the hack gate" in bad.rule
    none = score(1, None, None, RunningStats(), learns_values=False)
    assert none.reward == -1.0 and none.reward_applied is None and "learns no values" in none.rule


def test_a_refine_score_records_the_normalisers_inputs_and_the_applied_reward():
    stats = RunningStats().add(-1.0).add(-1.0).add(-1.0)
    slower = score(2, verdict(*OK.values(), latency=timed(0.15)), PairedSpeedup(1.02, 1.01, 1.03), stats, True)
    cols = slower.columns()
    assert -1.0 < cols["reward"] < -0.9  # 1.02x -> 0.15x: tanh(ln(0.15 / 1.02)), well beyond the noise
    assert cols["incumbent_speedup"] == 1.02 and cols["reward_norm_count"] == 4
    scale = max(cols["reward_norm_scale"], 1 / 3)
    assert cols["reward_applied"] == cols["reward_normalized"] == pytest.approx(cols["reward"] / scale)
    # the rule: divided by the rms of the campaign's refining rewards so far, so a much slower kernel keeps
    # its negative sign even when most refinements failed (the former z-score made it +0.635)
    assert cols["reward_applied"] < 0 and "tanh(ln(0.15/1.02)" in cols["reward_rule"]
    assert f"max(rms {scale:.4f} over 4 rewards, 1/3)" in cols["reward_rule"]


def test_an_untrusted_latency_leaves_the_kernel_feasible_but_earns_no_refining_reward():
    why = "latency not measured trustworthily: only 2 of 40 rounds were undisturbed by other work on the machine"
    gates = (OK["hack"], OK["compile"], OK["correctness"], GateResult("latency", True, why, 0.1))
    untrusted = LatencyResult(1.0, 1.6, 1.6, 1.2, 2.1, 40, trusted=False, untrusted_reason=why)
    refine, draft = attribute(verdict(*gates, latency=untrusted), 2), attribute(verdict(*gates, latency=untrusted), 1)
    assert refine.owner == CANDIDATE and refine.latency_untrusted == why and refine.latency_unmeasurable == ""
    assert draft == refine  # drafting scores feasibility only: the reward below is +1 all the same
    scored = score(2, verdict(*gates, latency=untrusted), PairedSpeedup(1.1, 1.0, 1.2), RunningStats().add(0.3),
                   learns_values=True).columns()
    assert scored["outcome_owner"] == CANDIDATE
    assert scored["reward"] is None and scored["reward_applied"] is None and scored["reward_norm_count"] is None
    assert "the machine's outcome" in scored["reward_rule"] and why in scored["reward_rule"]
    assert score(1, verdict(*gates, latency=untrusted), None, RunningStats(), True).columns()["reward"] == 1.0
    stored = json.dumps([{"name": g.name, "passed": g.passed, "reason": g.reason, "seconds": g.seconds} for g in gates])
    assert attribute_gates(gates_from_json(stored), 2) == refine
