"""The report's numbers: every metric query run on one DuckDB connection, as a typed result.

``compute_metrics`` runs on ANY DuckDB connection that has the lake's views (items, attempts,
retrievals, value_updates, campaigns, llm_calls); absent ones are treated as empty. The per-task
outcomes are computed once and registered as ``report_task_outcomes`` for the aggregate queries.
``Metrics.to_long`` is the long-format table written to metrics.parquet: the numbers behind
every table and plot of the report.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import duckdb
import polars as pl

from memory_lake.sqlfiles import sql as lake_sql
from reports.inventory import ensure_views
from reports.machine import adjust_groups, machine_outcomes
from reports.sql_files import query

TOP_ITEMS_PER_STAGE = 5
TOP_PROVENANCE_ITEMS = 15
OUTCOMES_VIEW = "report_task_outcomes"  # task_outcomes.sql, read by the aggregate queries
BEST_VIEW = "report_best_kernels"  # memory_lake's best_kernels.sql (the one definition of "best"), read by task_outcomes
LABELS_VIEW = "report_item_labels"  # item_labels.sql
SOLVES_VIEW = "report_solve_context"  # solve_context.sql, read by first_solves and provenance_items

LONG_SCHEMA = {
    "metric": pl.String,
    "campaign_id": pl.String,
    "group_kind": pl.String,  # all | level | category | task | stage | item
    "group": pl.String,
    "label": pl.String,  # task id or item title where a row is one of many points
    "x": pl.Float64,  # iteration / update index where the metric is a curve
    "value": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "n": pl.Int64,  # rows behind the value (tasks, retrievals, ...)
}

# Group-metric columns that carry an interval: metric -> (ci_low column, ci_high column).
_GROUP_CIS = {
    "speedup_geomean": ("speedup_geomean_ci_low", "speedup_geomean_ci_high"),
    "draft_speedup_median": ("draft_speedup_median_ci_low", "draft_speedup_median_ci_high"),
}
_GROUP_KEYS = ("campaign_id", "group_kind", "group_name")


@dataclass(frozen=True, eq=False)
class Metrics:
    campaign_ids: tuple[str, ...]
    campaigns: pl.DataFrame  # campaign_info.sql: one row per campaign in scope
    task_outcomes: pl.DataFrame  # task_outcomes.sql: one row per (campaign, task)
    groups: pl.DataFrame  # group_metrics.sql: per campaign x (all | level | category)
    learning_curves: pl.DataFrame  # learning_curves.sql
    speedups: pl.DataFrame  # speedup_distribution.sql: best kernel per solved task
    q_trajectories: pl.DataFrame  # q_trajectories.sql
    first_solves: pl.DataFrame  # first_solves.sql
    provenance_items: pl.DataFrame  # provenance_items.sql
    roofline: pl.DataFrame  # roofline_points.sql: best kernel per solved task with a roofline position
    machine_outcomes: pl.DataFrame = field(default_factory=pl.DataFrame)  # reports.machine: not judged, why

    @property
    def has_attempts(self) -> bool:
        return self.task_outcomes.height > 0

    def overall(self) -> pl.DataFrame:
        """The campaigns side by side: the 'all' group of each campaign with its labels."""
        labels = self.campaigns.select("campaign_id", "method", "model", "backend", "status", "budget")
        overall = self.groups.filter(pl.col("group_kind") == "all")
        return labels.join(overall, on="campaign_id", how="left").sort("campaign_id")

    def to_long(self) -> pl.DataFrame:
        """Every number behind the report in one long table (see LONG_SCHEMA)."""
        parts = [
            _long_groups(self.groups),
            _long_curves(self.learning_curves),
            _long_speedups(self.speedups),
            _long_q(self.q_trajectories),
            _long_provenance(self.provenance_items),
            _long_first_solves(self.first_solves),
            _long_roofline(self.roofline),
        ]
        frames = [_conform(part) for part in parts if part.height]
        return pl.concat(frames, how="vertical") if frames else pl.DataFrame(schema=LONG_SCHEMA)


def resolve_campaigns(con: duckdb.DuckDBPyConnection, campaign_ids: Sequence[str] | None) -> tuple[str, ...]:
    """The campaigns a report covers: those asked for, or every campaign the lake knows."""
    if campaign_ids:
        return tuple(dict.fromkeys(campaign_ids))
    return tuple(query(con, "scope_campaigns")["campaign_id"].to_list())


def compute_metrics(con: duckdb.DuckDBPyConnection, campaign_ids: Sequence[str] | None = None) -> Metrics:
    """Run every metric query for the campaigns (all when None) on ``con``."""
    ensure_views(con)
    scope = resolve_campaigns(con, campaign_ids)
    params = {"campaign_ids": list(scope), "top_n": TOP_ITEMS_PER_STAGE}
    con.register(BEST_VIEW, con.sql(lake_sql("best_kernels"), params={"campaign_ids": list(scope)}).to_arrow_table())
    try:
        outcomes = query(con, "task_outcomes", params)
    finally:
        con.unregister(BEST_VIEW)
    helpers = {OUTCOMES_VIEW: outcomes, LABELS_VIEW: query(con, "item_labels")}
    for name, frame in helpers.items():
        con.register(name, frame.to_arrow())
    helpers[SOLVES_VIEW] = query(con, "solve_context", params)  # after outcomes: it reads them
    con.register(SOLVES_VIEW, helpers[SOLVES_VIEW].to_arrow())
    machine = machine_outcomes(con, scope)
    try:
        return Metrics(
            campaign_ids=scope,
            campaigns=query(con, "campaign_info", params),
            task_outcomes=outcomes,
            groups=adjust_groups(con, scope, outcomes, query(con, "group_metrics", params), machine),
            learning_curves=query(con, "learning_curves"),
            speedups=query(con, "speedup_distribution"),
            q_trajectories=query(con, "q_trajectories", params),
            first_solves=query(con, "first_solves"),
            provenance_items=query(con, "provenance_items", {"top_n": TOP_PROVENANCE_ITEMS}),
            roofline=roofline_points(con),
            machine_outcomes=machine,
        )
    finally:
        for name in helpers:
            con.unregister(name)


def roofline_points(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """roofline_points.sql, or no rows where the attempts relation predates the roofline columns
    (a connection of the user's own whose attempts table was written before them)."""
    if "roof_fraction" not in con.sql("SELECT * FROM attempts LIMIT 0").columns:
        return pl.DataFrame()
    return query(con, "roofline_points")


def _conform(frame: pl.DataFrame) -> pl.DataFrame:
    columns = [
        (pl.col(name) if name in frame.columns else pl.lit(None)).cast(dtype).alias(name)
        for name, dtype in LONG_SCHEMA.items()
    ]
    return frame.select(columns)


def _long_groups(groups: pl.DataFrame) -> pl.DataFrame:
    value_columns = [
        name for name, dtype in groups.schema.items() if name not in _GROUP_KEYS and dtype.is_numeric()
    ]
    rows = groups.unpivot(index=[*_GROUP_KEYS, "n_tasks"], on=value_columns, variable_name="metric")
    intervals = pl.concat([
        groups.select(*_GROUP_KEYS, pl.lit(metric).alias("metric"),
                      pl.col(low).alias("ci_low"), pl.col(high).alias("ci_high"))
        for metric, (low, high) in _GROUP_CIS.items()
    ])
    rows = rows.join(intervals, on=[*_GROUP_KEYS, "metric"], how="left")
    return rows.rename({"group_name": "group", "n_tasks": "n"})


def _long_curves(curves: pl.DataFrame) -> pl.DataFrame:
    return curves.unpivot(
        index=["campaign_id", "iteration"], on=["compile_rate", "correct_rate"], variable_name="metric"
    ).with_columns(
        ("cumulative_" + pl.col("metric")).alias("metric"),
        pl.lit("all").alias("group_kind"),
        pl.lit("all").alias("group"),
        pl.col("iteration").alias("x"),
    )


def _long_speedups(speedups: pl.DataFrame) -> pl.DataFrame:
    best = speedups.select(
        pl.lit("best_speedup").alias("metric"), "campaign_id", pl.lit("category").alias("group_kind"),
        pl.col("category").alias("group"), pl.col("task_id").alias("label"),
        pl.col("best_speedup").alias("value"), pl.col("best_ci_low").alias("ci_low"),
        pl.col("best_ci_high").alias("ci_high"),
    )  # the median with the verifier's 95% CI (ci_low: the conservative bound)
    draft = speedups.filter(pl.col("draft_speedup").is_not_null()).select(
        pl.lit("draft_speedup").alias("metric"), "campaign_id", pl.lit("category").alias("group_kind"),
        pl.col("category").alias("group"), pl.col("task_id").alias("label"),
        pl.col("draft_speedup").alias("value"), pl.col("draft_speedup_ci_low").alias("ci_low"),
        pl.col("draft_speedup_ci_high").alias("ci_high"),
    )
    return pl.concat([best, draft], how="vertical")


def _long_q(q: pl.DataFrame) -> pl.DataFrame:
    return q.select(
        pl.lit("q_value").alias("metric"), "campaign_id", pl.lit("stage").alias("group_kind"),
        ("stage " + pl.col("stage").cast(pl.String)).alias("group"), pl.col("item_id").alias("label"),
        pl.col("update_index").alias("x"), pl.col("q_after").alias("value"), pl.col("n_retrievals").alias("n"),
    )


def _long_provenance(items: pl.DataFrame) -> pl.DataFrame:
    return items.unpivot(
        index=["campaign_id", "item_id", "n_solves_preceded"], on=["n_solves_in_context"], variable_name="metric"
    ).select(
        pl.lit("solves_with_item_in_context").alias("metric"), "campaign_id", pl.lit("item").alias("group_kind"),
        pl.col("item_id").alias("group"), pl.col("item_id").alias("label"), "value",
        pl.col("n_solves_preceded").alias("n"),
    )


def _long_roofline(points: pl.DataFrame) -> pl.DataFrame:
    if points.is_empty():
        return points
    return points.select(
        pl.lit("roof_fraction").alias("metric"), "campaign_id", pl.lit("task").alias("group_kind"),
        pl.col("task_id").alias("group"), pl.col("roof_bound").alias("label"),
        pl.col("intensity").alias("x"), pl.col("roof_fraction").alias("value"),
    )


def _long_first_solves(solves: pl.DataFrame) -> pl.DataFrame:
    return solves.select(
        pl.lit("first_solve_iteration").alias("metric"), "campaign_id", pl.lit("task").alias("group_kind"),
        pl.col("task_id").alias("group"), pl.col("task_id").alias("label"),
        pl.col("solve_iteration").alias("value"), pl.col("n_items_retrieved_before").alias("n"),
    )
