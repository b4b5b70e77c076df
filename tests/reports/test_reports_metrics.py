"""Metric definitions checked on the hand-made lake (reports_handmade_lake.py), answers by hand."""

from __future__ import annotations

import math

import duckdb
import polars as pl
import pyarrow as pa
import pytest

import reports_handmade_lake as handmade
from memory_lake.schema import TABLES
from reports.metrics import LONG_SCHEMA, compute_metrics


@pytest.fixture()
def metrics(handmade_con):
    return compute_metrics(handmade_con)


def group(metrics, campaign="c1", kind="all", name="all") -> dict:
    rows = metrics.groups.filter(
        (pl.col("campaign_id") == campaign) & (pl.col("group_kind") == kind) & (pl.col("group_name") == name)
    ).to_dicts()
    assert len(rows) == 1, (campaign, kind, name)
    return rows[0]


def test_all_campaigns_are_covered_when_none_are_named(metrics):
    assert metrics.campaign_ids == ("c1", "c2")
    assert metrics.campaigns["method"].to_list() == ["evokernel", "pass-at-k"]
    assert metrics.campaigns.filter(pl.col("campaign_id") == "c1")["status"].item() == "finished"  # latest row


def test_task_and_attempt_shares(metrics):
    c1 = group(metrics)
    assert c1["n_tasks"] == 4
    assert c1["n_attempts"] == 11  # the attempt at iteration 10 is outside the budget of 10
    assert c1["compile_rate_tasks"] == 1.0
    assert c1["correct_rate_tasks"] == 0.75
    assert c1["compile_rate_attempts"] == pytest.approx(8 / 11)
    assert c1["correct_rate_attempts"] == pytest.approx(5 / 11)


def test_fast_p_has_all_tasks_in_the_denominator(metrics):
    c1 = group(metrics)
    # best speedups: t1 2.0, t2 2.5, t3 1.2, t4 none -> 3 of 4 faster than PyTorch
    assert (c1["fast_0"], c1["fast_1"], c1["fast_1_5"], c1["fast_2"]) == (0.75, 0.75, 0.5, 0.25)
    assert c1["fast_0"] == c1["correct_rate_tasks"]
    c2 = group(metrics, "c2")
    assert (c2["fast_0"], c2["fast_1"], c2["fast_2"]) == (0.5, 0.0, 0.0)  # correct but 0.5x


def test_geomean_speedup_over_correct_tasks_with_verifier_intervals(metrics):
    c1 = group(metrics)
    assert c1["n_speedup_tasks"] == 3
    assert c1["speedup_geomean"] == pytest.approx((2.0 * 2.5 * 1.2) ** (1 / 3))
    assert c1["speedup_geomean_ci_low"] == pytest.approx((1.8 * 2.4 * 1.1) ** (1 / 3))
    assert c1["speedup_geomean_ci_high"] == pytest.approx((2.2 * 2.6 * 1.3) ** (1 / 3))


def test_speedup_over_first_draft_median_and_iqr(metrics):
    c1 = group(metrics)
    # first feasible draft / fastest feasible: t1 2.0/1.0, t2 4.0/2.0, t3 3.0/3.0
    assert c1["n_draft_speedup_tasks"] == 3
    assert c1["draft_speedup_median"] == 2.0
    assert (c1["draft_speedup_q1"], c1["draft_speedup_q3"]) == (1.5, 2.0)
    t1 = metrics.task_outcomes.filter((pl.col("campaign_id") == "c1") & (pl.col("task_id") == "t1")).row(0, named=True)
    assert t1["draft_speedup_ci_low"] == pytest.approx(1.8 / 1.1)  # best.ci_low / first.ci_high
    assert t1["draft_speedup_ci_high"] == pytest.approx(2.2 / 0.9)


def test_budget_excludes_attempts_beyond_it(metrics):
    t4 = metrics.task_outcomes.filter((pl.col("campaign_id") == "c1") & (pl.col("task_id") == "t4")).row(0, named=True)
    assert t4["n_attempts"] == 3 and t4["n_correct"] == 0 and t4["best_speedup"] is None
    assert "t4" not in metrics.first_solves.filter(pl.col("campaign_id") == "c1")["task_id"].to_list()


def test_iterations_to_first_feasible(metrics):
    c1 = group(metrics)
    assert c1["n_feasible_tasks"] == 3
    assert c1["iterations_to_first_feasible_median"] == 1.0  # t1: 3, t2: 1, t3: 1
    assert c1["iterations_to_first_feasible_mean"] == pytest.approx(5 / 3)


def test_cost_counts_attempts_and_recorded_distillation_calls(metrics):
    c1 = group(metrics)
    assert c1["llm_calls"] == 11 + 2
    assert c1["tokens"] == 11 * 150 + 20 + 30
    assert c1["cost_usd"] == pytest.approx(11 * 0.01 + 0.002 + 0.005)
    assert c1["verify_seconds"] == pytest.approx(11.0)
    assert c1["n_correct_kernels"] == 5
    assert c1["llm_calls_per_correct_kernel"] == pytest.approx(13 / 5)
    assert c1["verify_seconds_per_correct_kernel"] == pytest.approx(11 / 5)
    # the call attributed to t1 counts in its category, the unattributed one only in 'all'
    assert group(metrics, kind="category", name="activation")["llm_calls"] == 6 + 1
    # tokens without reported usage: one attempt (150) and the unattributed distillation (30)
    assert (c1["estimated_tokens"], group(metrics, kind="category", name="activation")["estimated_tokens"]) == (180, 150)
    assert group(metrics, campaign="c2")["estimated_tokens"] == 0


def test_per_level_and_category_groups(metrics):
    level2 = group(metrics, kind="level", name="level 2")
    assert (level2["n_tasks"], level2["correct_rate_tasks"], level2["fast_1"]) == (1, 0.0, 0.0)
    activation = group(metrics, kind="category", name="activation")
    assert activation["n_tasks"] == 2 and activation["fast_2"] == 0.5
    assert activation["speedup_geomean"] == pytest.approx(math.sqrt(2.0 * 2.5))
    kinds = set(metrics.groups.filter(pl.col("campaign_id") == "c1")["group_name"])
    assert kinds == {"all", "level 1", "level 2", "activation", "matmul", "fusion"}


def test_learning_curves_are_cumulative_shares_of_all_tasks(metrics):
    c1 = metrics.learning_curves.filter(pl.col("campaign_id") == "c1")
    assert c1["iteration"].to_list() == [0, 1, 2, 3]
    assert c1["compile_rate"].to_list() == [0.5, 0.75, 1.0, 1.0]
    assert c1["correct_rate"].to_list() == [0.5, 0.5, 0.75, 0.75]


def test_q_trajectories_of_most_retrieved_items_follow_seq(metrics):
    q = metrics.q_trajectories
    template = q.filter((pl.col("item_id") == "i1") & (pl.col("stage") == 1))
    assert template["n_retrievals"][0] == 5
    assert template["seq"].to_list() == [1, 2, 3, 5]
    assert template["q_after"].to_list() == pytest.approx([-0.3, -0.51, -0.057, 0.2601])
    assert q.filter(pl.col("stage") == 2)["item_id"].to_list() == ["i3"]


def test_provenance_of_first_solves(metrics):
    items = {r["item_id"]: r for r in metrics.provenance_items.to_dicts()}
    assert (items["i1"]["n_solves_in_context"], items["i1"]["n_solves_preceded"]) == (2, 2)
    assert items["i2"]["n_solves_in_context"] == 1  # t1's solving attempt
    assert items["i3"]["n_solves_in_context"] == 1  # t2's; its later retrieval for t1 came after t1's solve
    solves = {r["task_id"]: r for r in metrics.first_solves.filter(pl.col("campaign_id") == "c1").to_dicts()}
    assert solves["t1"]["solve_iteration"] == 2
    assert solves["t1"]["items_in_solving_context"] == ["OpenMP loop template", "vectorise expf"]
    assert solves["t3"]["items_in_solving_context"] == []


def test_campaign_filter(handmade_con):
    only = compute_metrics(handmade_con, ["c2"])
    assert only.campaign_ids == ("c2",)
    assert set(only.groups["campaign_id"]) == {"c2"}
    assert only.q_trajectories.is_empty()  # c2 retrieved nothing


def test_long_table_holds_the_numbers_behind_tables_and_plots(metrics):
    long = metrics.to_long()
    assert long.schema == pl.Schema(LONG_SCHEMA)
    fast1 = long.filter((pl.col("metric") == "fast_1") & (pl.col("campaign_id") == "c1") & (pl.col("group") == "all"))
    assert fast1["value"].item() == 0.75 and fast1["n"].item() == 4
    geo = long.filter((pl.col("metric") == "speedup_geomean") & (pl.col("campaign_id") == "c1")
                      & (pl.col("group") == "all")).row(0, named=True)
    assert geo["ci_low"] == pytest.approx((1.8 * 2.4 * 1.1) ** (1 / 3))
    assert set(long["metric"]) >= {"cumulative_correct_rate", "best_speedup", "draft_speedup", "q_value",
                                   "solves_with_item_in_context", "first_solve_iteration"}


def test_roofline_points_are_the_best_kernels_with_their_references(metrics):
    points = {r["task_id"]: r for r in metrics.roofline.filter(pl.col("campaign_id") == "c1").to_dicts()}
    assert set(points) == {"t1", "t2"}  # t3's best kernel has no roofline position
    assert points["t1"]["intensity"] == pytest.approx(0.25) and points["t1"]["achieved_gflops"] == 2.0
    assert points["t1"]["reference_gflops"] == pytest.approx(1.0)  # 2 MFLOP over the reference's 2 ms
    assert points["t2"]["roof_bound"] == "compute" and points["t2"]["reference_gflops"] == pytest.approx(20.0)
    fractions = metrics.to_long().filter(pl.col("metric") == "roof_fraction")
    assert sorted(fractions["value"].to_list()) == [0.4, 0.5]


def test_a_connection_whose_attempts_predate_the_roofline_has_no_points():
    con = duckdb.connect()
    old = pa.schema([f for f in TABLES["attempts"] if f.name not in ("roof_fraction", "roof_bound", "bytes_moved")])
    con.register("attempts", pa.Table.from_pylist(handmade.attempts(), schema=old))
    metrics = compute_metrics(con)
    assert metrics.roofline.is_empty() and group(metrics)["n_tasks"] == 4  # the rest of the report is there


def test_runs_on_any_duckdb_connection_with_the_views():
    """No Lake at all: plain DuckDB with the tables registered gives the same numbers."""
    con = duckdb.connect()
    for table, rows in handmade.TABLE_ROWS.items():
        if table != "llm_calls":  # absent tables are treated as empty
            con.register(table, pa.Table.from_pylist(rows(), schema=TABLES[table]))
    metrics = compute_metrics(con)
    c1 = group(metrics)
    assert (c1["fast_1"], c1["llm_calls"]) == (0.75, 11)


def test_draft_speedup_uses_paired_speedups_and_stays_inside_its_interval(tmp_path):
    """The reference ran 3x slower during the refined kernel's verification (a loaded machine): raw
    latencies would claim 1.5x over the draft, the paired speedups say 2x, within both CIs' bounds."""
    rows = [
        handmade._attempt("c9", "t1", 0, handmade.FEASIBLE, ms=2.0, speedup=1.0, ci=(0.9, 1.1)),
        handmade._attempt("c9", "t1", 1, handmade.FEASIBLE, ms=4.0 / 3.0, speedup=2.0, ci=(1.8, 2.2), stage=2,
                          reward=0.5) | {"reference_ms": 8.0 / 3.0},
    ]
    lake = handmade.make_lake(tmp_path / "lake", tables={"campaigns": handmade.campaigns}, extra_attempts=rows)
    con = lake.connect()
    outcome = compute_metrics(con, ["c9"]).task_outcomes.row(0, named=True)
    assert outcome["draft_speedup"] == pytest.approx(2.0)
    assert outcome["draft_speedup_ci_low"] <= outcome["draft_speedup"] <= outcome["draft_speedup_ci_high"]


def test_an_identical_resubmission_is_one_correct_kernel_in_the_cost_table(tmp_path):
    """issue 39: the model sent the same correct code three times; cost per correct kernel counts it once
    (the per-attempt correctness rate still counts every attempt)."""
    from memory_lake import Lake

    rows = [handmade._attempt("c", "t1", i, handmade.FEASIBLE, ms=1.0, speedup=1.0) for i in range(4)]
    for row in rows[1:]:
        row["code_sha256"] = "same-code"
    with Lake.create(tmp_path / "lake", "cpu") as lake:
        lake.append("attempts", rows)
        con = lake.connect()
        try:
            found = compute_metrics(con, ["c"])
        finally:
            con.close()
    everything = found.groups.filter(pl.col("group_kind") == "all").row(0, named=True)
    assert everything["n_correct_kernels"] == 2 and everything["correct_rate_attempts"] == 1.0
    assert everything["llm_calls_per_correct_kernel"] == pytest.approx(4 / 2)
