"""The machine's outcomes in a report: counted apart, out of the per-attempt rates; and a campaign
whose machine measured no latency shows its latency metrics as "not measured on this machine"."""

from __future__ import annotations

import json

import polars as pl
import pytest

import reports_handmade_lake as handmade
from memory_lake import Lake
from reports.build import write_report
from reports.measured import NOT_MEASURED
from reports.metrics import compute_metrics

NO_NPU = "latency unavailable here: needs torch_npu and an NPU"


def _machine(iteration: int, reason: str) -> dict:
    row = handmade._attempt("c1", "t1", iteration, handmade.NO)
    return row | {"attempt_id": f"c1-t1-m{iteration}", "outcome_owner": "machine", "machine_reason": reason,
                  "reward": None, "hack_passed": True, "failed_gate": None}


def _untimed(task: str, iteration: int, feasible: bool) -> dict:
    row = handmade._attempt("c3", task, iteration, handmade.FEASIBLE if feasible else handmade.COMPILES)
    gates = [{"name": "hack", "passed": True, "reason": ""}, {"name": "compile", "passed": True, "reason": ""},
             {"name": "correctness", "passed": feasible, "reason": "" if feasible else "mismatch"}]
    if feasible:
        gates.append({"name": "latency", "passed": False, "reason": NO_NPU})
    return row | {"attempt_id": f"c3-{task}-{iteration}", "gates_json": json.dumps(gates), "outcome_owner": "candidate"}


def _campaigns() -> list[dict]:
    c3 = dict(handmade.campaigns()[-1], campaign_id="c3", method="evokernel", backend="triton-ascend")
    return handmade.campaigns() + [c3]


@pytest.fixture(scope="module")
def lake_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("machine") / "lake"
    extra = [_machine(4, "reference worker crashed (SIGKILL)"), _machine(5, "reference worker crashed (SIGKILL)"),
             _machine(6, "compile unavailable here: no g++"),
             _untimed("t1", 0, False), _untimed("t1", 1, True), _untimed("t2", 0, True)]
    make = {**handmade.TABLE_ROWS, "campaigns": _campaigns}
    handmade.make_lake(root, make, extra).close()
    return root


def _group(metrics, campaign: str) -> dict:
    return metrics.groups.filter((pl.col("campaign_id") == campaign) & (pl.col("group_kind") == "all")).to_dicts()[0]


def test_the_machines_outcomes_are_counted_apart_and_left_out_of_attempt_rates(lake_root):
    with Lake.open(lake_root) as lake:
        con = lake.connect()
        metrics = compute_metrics(con)
        con.close()
    c1 = _group(metrics, "c1")
    assert c1["n_attempts"] == 14 and c1["n_machine_outcomes"] == 3
    assert c1["compile_rate_attempts"] == pytest.approx(8 / 11)  # as without them: they were not judged
    assert c1["correct_rate_attempts"] == pytest.approx(5 / 11)
    assert c1["fast_1"] == 0.75 and c1["latency_not_measured"] is None  # c1 timed its kernels
    by_reason = dict(metrics.machine_outcomes.group_by("machine_reason").agg(pl.col("n_machine_outcomes").sum()).iter_rows())
    assert by_reason == {"reference worker crashed (SIGKILL)": 2, "compile unavailable here: no g++": 1}
    long = metrics.to_long().filter((pl.col("metric") == "n_machine_outcomes") & (pl.col("group") == "all"))
    assert dict(zip(long["campaign_id"], long["value"])) == {"c1": 3.0, "c2": 0.0, "c3": 0.0}


def test_latency_metrics_of_a_machine_that_timed_nothing_are_not_measured_not_zero(lake_root, tmp_path):
    with Lake.open(lake_root) as lake:
        con = lake.connect()
        c3 = _group(compute_metrics(con), "c3")
        con.close()
    assert c3["correct_rate_tasks"] == 1.0 and c3["latency_not_measured"] == NO_NPU
    assert c3["fast_1"] is None and c3["speedup_geomean"] is None and c3["draft_speedup_median"] is None
    result = write_report(lake_root, tmp_path / "report")
    summary = result.summary_path.read_text()
    row = next(line for line in summary.splitlines() if line.startswith("| c3 "))
    assert row.count(NOT_MEASURED) == 7 and "0.0%" not in row.split("|")[7]  # fast_1 .. fast_1 conservative .. draft IQR
    c1_row = next(line for line in summary.splitlines() if line.startswith("| c1 "))
    assert "14 (3 the machine's)" in c1_row and NOT_MEASURED not in c1_row
    html = result.html_path.read_text()
    assert "The machine&#x27;s outcomes (not judged, never rewarded)" in html and "reference worker crashed" in html
