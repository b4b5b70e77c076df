"""What the machine, not the candidate, decided in a campaign: its outcomes counted apart, and the
latency-based metrics of a campaign whose machine measured no latency marked "not measured on this
machine" (never 0%).

- :func:`machine_outcomes`: attempts the agent attributed to the machine (attempts.outcome_owner,
  evokernel/agent/attribution.py), per campaign, task and reason. Lakes written before attribution
  was recorded have none.
- :func:`adjust_groups`: the group metrics with per-attempt rates over judged attempts only (the
  machine's outcomes are no attempt of the candidate's), the count of machine outcomes, and, where a
  campaign timed nothing because the latency gate cannot run on its machine, its latency metrics
  (fast_p for p > 0, speedups) set to null with ``latency_not_measured`` saying why.
"""

from __future__ import annotations

from typing import Sequence

import duckdb
import polars as pl

from reports.sql_files import query
from reports.tables import Table, number

LATENCY_METRICS = ("fast_1", "fast_1_5", "fast_2", "speedup_geomean", "speedup_geomean_ci_low",
                   "speedup_geomean_ci_high", "draft_speedup_median", "draft_speedup_median_ci_low",
                   "draft_speedup_median_ci_high", "draft_speedup_q1", "draft_speedup_q3", "fast_1_ci_low")
_EMPTY = pl.DataFrame(schema={"campaign_id": pl.String, "task_id": pl.String, "machine_reason": pl.String,
                              "n_machine_outcomes": pl.Int64})


def _has_attribution(con: duckdb.DuckDBPyConnection) -> bool:
    return "outcome_owner" in con.sql("SELECT * FROM attempts LIMIT 0").columns


def machine_outcomes(con: duckdb.DuckDBPyConnection, campaign_ids: Sequence[str]) -> pl.DataFrame:
    """machine_outcomes.sql (no rows where the attempts relation predates attribution)."""
    if not _has_attribution(con):
        return _EMPTY
    return query(con, "machine_outcomes", {"campaign_ids": list(campaign_ids)}).cast(
        {"n_machine_outcomes": pl.Int64})


def adjust_groups(con: duckdb.DuckDBPyConnection, campaign_ids: Sequence[str], outcomes: pl.DataFrame,
                  groups: pl.DataFrame, machine: pl.DataFrame) -> pl.DataFrame:
    """The group metrics, attribution-aware (see the module docstring)."""
    if groups.is_empty():
        return groups.with_columns(pl.lit(0, pl.Int64).alias("n_machine_outcomes"),
                                   pl.lit(None, pl.String).alias("latency_not_measured"))
    per_task = machine.group_by("campaign_id", "task_id").agg(pl.col("n_machine_outcomes").sum())
    tasks = outcomes.select("campaign_id", "task_id", "level", "category", "n_attempts", "n_compiled",
                            "n_correct").join(per_task, on=["campaign_id", "task_id"], how="left")
    tasks = tasks.with_columns(pl.col("n_machine_outcomes").fill_null(0))
    parts = []
    for kind, key in (("all", pl.lit("all")), ("level", pl.lit("level ") + pl.col("level").cast(pl.String)),
                      ("category", pl.col("category").fill_null("?"))):
        parts.append(tasks.with_columns(key.alias("group_name"), pl.lit(kind).alias("group_kind"))
                     .group_by("campaign_id", "group_kind", "group_name")
                     .agg(pl.col("n_machine_outcomes").sum(),
                          judged=(pl.col("n_attempts") - pl.col("n_machine_outcomes")).sum(),
                          compiled=pl.col("n_compiled").sum(), correct=pl.col("n_correct").sum()))
    judged = pl.concat(parts).with_columns(
        (pl.col("compiled") / pl.when(pl.col("judged") > 0).then(pl.col("judged"))).alias("compile_rate_attempts"),
        (pl.col("correct") / pl.when(pl.col("judged") > 0).then(pl.col("judged"))).alias("correct_rate_attempts"),
    ).drop("judged", "compiled", "correct")
    keys = ["campaign_id", "group_kind", "group_name"]
    adjusted = groups.drop("compile_rate_attempts", "correct_rate_attempts").join(judged, on=keys, how="left")
    adjusted = adjusted.select(*groups.columns, "n_machine_outcomes")
    return _mark_unmeasured(adjusted, query(con, "latency_measured", {"campaign_ids": list(campaign_ids)}))


def _mark_unmeasured(groups: pl.DataFrame, flags: pl.DataFrame) -> pl.DataFrame:
    reason = flags.filter((pl.col("n_timed") == 0) & pl.col("latency_unavailable").is_not_null()).select(
        "campaign_id", pl.col("latency_unavailable").alias("latency_not_measured"))
    marked = groups.join(reason, on="campaign_id", how="left")
    unmeasured = pl.col("latency_not_measured").is_not_null()
    present = [c for c in LATENCY_METRICS if c in marked.columns]
    return marked.with_columns(
        [pl.when(unmeasured).then(None).otherwise(pl.col(c)).alias(c) for c in present])


def machine_table(machine: pl.DataFrame) -> Table:
    """The machine's outcomes per campaign and reason (what was not judged, and why)."""
    if machine.is_empty():
        return Table("The machine's outcomes (not judged, never rewarded)", ("campaign", "reason", "attempts", "tasks"), ())
    rows = machine.group_by("campaign_id", "machine_reason").agg(
        pl.col("n_machine_outcomes").sum(), pl.col("task_id").n_unique().alias("tasks")).sort(
        "campaign_id", "n_machine_outcomes", descending=[False, True])
    return Table(
        "The machine's outcomes (not judged, never rewarded)",
        ("campaign", "reason", "attempts", "tasks"),
        tuple((r["campaign_id"], r["machine_reason"] or "?", number(r["n_machine_outcomes"], 0), number(r["tasks"], 0))
              for r in rows.iter_rows(named=True)),
        "Verifications that failed for the machine's reasons (inputs that do not fit, a toolchain or worker "
        "crash, a gate this machine cannot run): recorded, counted here, left out of every per-attempt rate.",
    )
