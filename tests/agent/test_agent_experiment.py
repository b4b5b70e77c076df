"""`evokernel experiment`: the plan (equal LLM-call budget, one lake copy per run, resume checks) and
the flow end to end under Prefect's harness (scripted LLM, real verifier, real lakes), resumed."""

from __future__ import annotations

import json

import polars as pl
import pytest

from agent_fixtures import write_script
from evokernel.agent.experiment import ExperimentError, plan_experiment, prepare_run_lake
from memory_lake import Lake, NewItem, ValueUpdate

FAST = {"latency_rounds": 5, "verify_threads": 2}


def test_every_method_gets_the_same_llm_calls_per_task(tmp_path, tiny_build):
    plan = plan_experiment(tmp_path / "exp", tiny_build.root, "scripted:x", seeds=(0, 1), llm_calls_per_task=10)
    budgets = {(r.method, r.seed): r.budget for r in plan.runs()}
    # evokernel and heuristic distil after each task: one of their 10 calls is the distillation
    assert budgets == {(m, s): 9 if m in ("evokernel", "heuristic") else 10
                       for m in ("evokernel", "pass-at-k", "refinement", "heuristic", "no-memory") for s in (0, 1)}
    assert len({r.lake for r in plan.runs()}) == 10 and len({r.campaign_id for r in plan.runs()}) == 10
    assert plan.runs()[0].campaign_id == "exp-evokernel-s0"


def test_a_resumed_experiment_must_ask_for_the_same(tmp_path, tiny_build):
    plan_experiment(tmp_path / "exp", tiny_build.root, "scripted:x", methods=("evokernel",), seeds=(0,))
    again = plan_experiment(tmp_path / "exp", tiny_build.root, "scripted:x", methods=("evokernel",), seeds=(0,))
    assert again.experiment_id == "exp"
    with pytest.raises(ExperimentError, match=r"started with seeds=\[0\]; cannot resume it with \[0, 1\]"):
        plan_experiment(tmp_path / "exp", tiny_build.root, "scripted:x", methods=("evokernel",), seeds=(0, 1))
    with pytest.raises(ExperimentError, match="'best-of' is not a method"):
        plan_experiment(tmp_path / "other", tiny_build.root, "scripted:x", methods=("best-of",))
    with pytest.raises(ExperimentError, match="no memory lake there"):
        plan_experiment(tmp_path / "other", tiny_build.root, "scripted:x", start_lake=str(tmp_path / "nowhere"))


def test_each_run_gets_its_own_copy_of_the_starting_lake_once(tmp_path, tiny_build):
    start = tmp_path / "start"
    with Lake.create(start, "cpu") as lake:
        lake.add_items([NewItem(kind="experience", backend="cpu", title="t", body="b", item_id="e1")])
        lake.update_values([ValueUpdate("e1", 1, 1.0, 0.5)])
    before = sorted(p.name for p in start.rglob("*") if p.is_file() and not p.name.endswith(("-shm", "-wal")))
    plan = plan_experiment(tmp_path / "exp", tiny_build.root, "scripted:x", methods=("evokernel", "pass-at-k"),
                           seeds=(0,), start_lake=str(start))
    first, second = plan.runs()
    assert prepare_run_lake(plan, first).startswith(f"copy of {start}")
    assert prepare_run_lake(plan, first) == "copy of the starting lake, made earlier"
    prepare_run_lake(plan, second)
    for run in (first, second):
        with Lake.open(run.lake) as lake:
            assert lake.current_q(["e1"], 1) == {"e1": 0.5}
            lake.update_values([ValueUpdate("e1", 1, -1.0, 0.5)])  # a run's learning stays in its lake
    with Lake.open(start) as lake:
        assert lake.current_q(["e1"], 1) == {"e1": 0.5}
    assert sorted(p.name for p in start.rglob("*") if p.is_file() and not p.name.endswith(("-shm", "-wal"))) == before


def test_the_experiment_flow_end_to_end_and_resumed(prefect_harness, tmp_path, tiny_build):
    from flows.experiment import experiment

    task = tiny_build.runnable()[0].task_id
    script = write_script(tmp_path / "s.json", [task], draft=["relu_draft_hack", "relu_draft_scalar"],
                          refine=["relu_refine_omp"])
    params = dict(build=str(tiny_build.root), llm=f"scripted:{script}", out=str(tmp_path / "exp"),
                  methods=["evokernel", "pass-at-k"], seeds=[0, 1], llm_calls_per_task=3, tasks=[task],
                  settings_overrides=FAST)
    result = experiment(**params)
    report = (tmp_path / "exp" / "report" / "experiment.md").read_text()
    assert result["report"].endswith("experiment.md") and "2 methods x 2 seeds x 1 tasks" in report
    per_task = pl.read_parquet(tmp_path / "exp" / "report" / "per_task.parquet")
    calls = dict(per_task.group_by("method").agg(pl.col("llm_calls").sum()).iter_rows())
    assert calls == {"evokernel": 6, "pass-at-k": 6}  # 3 per task and seed each: 2 generations + 1 distill, or 3
    assert per_task["correct"].to_list() == [1.0] * 4  # the scalar draft is correct in every run
    summary = pl.read_parquet(tmp_path / "exp" / "report" / "experiment.parquet")
    correct = summary.filter(pl.col("metric") == "correct")
    assert correct["mean"].to_list() == [1.0, 1.0] and correct["diff"].to_list()[1] == 0.0
    attempts = {}
    for run in result["runs"]:
        with Lake.open(run["lake"]) as lake:
            attempts[run["run"]] = lake.query("SELECT count(*) AS n FROM attempts").column(0)[0].as_py()
    assert attempts == {"evokernel-s0": 2, "evokernel-s1": 2, "pass-at-k-s0": 3, "pass-at-k-s1": 3}
    again = experiment(**params)  # resumed: every campaign had finished, nothing is added
    for run in again["runs"]:
        with Lake.open(run["lake"]) as lake:
            assert lake.query("SELECT count(*) AS n FROM attempts").column(0)[0].as_py() == attempts[run["run"]]
    recorded = json.loads((tmp_path / "exp" / "experiment.json").read_text())
    assert recorded["methods"] == ["evokernel", "pass-at-k"] and recorded["llm_calls_per_task"] == 3
