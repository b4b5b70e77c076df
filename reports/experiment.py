"""The side-by-side report of an experiment (methods x seeds, each run a campaign in its own lake).

Per run, the campaign's per-task outcomes come from the same queries as every report
(reports.metrics.compute_metrics); a task the run never attempted counts as not compiled and not
solved. Per method, each task's value is averaged over the seeds; then every metric is a mean over
tasks with a 95% bootstrap interval that resamples tasks (tasks, not attempts, are the independent
units), and each method's difference from the first method (the reference, evokernel by default)
is paired by task:

- correctness and compile rate: share of tasks with a correct / compiling kernel within the budget,
  and per attempt: a task's correct / compiling attempts over its attempts, averaged over tasks;
- fast_1, fast_1.5: share of tasks whose best correct kernel is faster than PyTorch by more than p;
- speedup over PyTorch and over the first feasible draft: geometric means over the tasks that have
  one (the bootstrap runs on the log) of the best kernel's median speedup (the one definition of best,
  memory_lake best_kernels.sql) and of its ratio to the first draft (measured in one paired
  verification when the task ended, else estimated from two: reports/sql/task_outcomes.sql);
- tokens and cost per correct kernel: the method's tokens (or USD) over its correct kernels, both
  summed over tasks and seeds (a ratio, bootstrapped over tasks); LLM calls per task show the
  equal budget; the machine's outcomes are counted apart.

Latency metrics of a method whose machine timed nothing read "not measured on this machine".
Writes ``experiment.md``, ``experiment.parquet`` (method, metric, mean, low, high, n) and
``per_task.parquet`` (one row per method, seed and task).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import polars as pl

from reports.bootstrap import Interval, mean_ci, paired_diff_ci, ratio_ci
from reports.build import open_lake_connection
from reports.measured import NOT_MEASURED
from reports.metrics import compute_metrics


@dataclass(frozen=True)
class RunRef:
    method: str
    seed: int
    campaign_id: str
    lake: str


SHARES = (("correct", "correctness (tasks)"), ("compiled", "compile rate (tasks)"),
          ("correct_attempts", "correctness per attempt (mean over tasks)"),
          ("compiled_attempts", "compile rate per attempt (mean over tasks)"),
          ("fast_1", "fast_1 (best kernel's median > 1)"), ("fast_1_5", "fast_1.5"))
GEOMEANS = (("log_speedup", "speedup over PyTorch (geomean of best kernels' medians)"),
            ("log_draft_speedup", "speedup over first draft (geomean of per-task ratios)"))
RATIOS = (("tokens", "tokens per correct kernel"), ("cost_usd", "USD per correct kernel"))
LATENCY = {"fast_1", "fast_1_5", "log_speedup", "log_draft_speedup"}


def run_rows(run: RunRef, tasks: Sequence[str]) -> pl.DataFrame:
    """One row per task of the experiment for one run (tasks never attempted: unsolved, no cost)."""
    con = open_lake_connection(run.lake)
    try:
        metrics = compute_metrics(con, [run.campaign_id])
    finally:
        con.close()
    outcomes = {r["task_id"]: r for r in metrics.task_outcomes.iter_rows(named=True)}
    machine = metrics.machine_outcomes
    per_task_machine = dict(machine.group_by("task_id").agg(pl.col("n_machine_outcomes").sum()).iter_rows()) \
        if machine.height else {}
    unmeasured = any(metrics.groups["latency_not_measured"].drop_nulls().to_list()) if metrics.groups.height else False
    status = metrics.campaigns["status"].to_list()[0] if metrics.campaigns.height else "missing"
    rows = []
    for task in tasks:
        o = outcomes.get(task, {})
        best, draft = o.get("best_speedup"), o.get("draft_speedup")
        correct = bool(o.get("n_correct"))
        rows.append({
            "method": run.method, "seed": run.seed, "campaign_id": run.campaign_id, "task_id": task, "status": status,
            "attempted": bool(o), "correct": float(correct), "compiled": float(bool(o.get("n_compiled"))),
            "correct_attempts": (o.get("n_correct") or 0) / o["n_attempts"] if o.get("n_attempts") else 0.0,
            "compiled_attempts": (o.get("n_compiled") or 0) / o["n_attempts"] if o.get("n_attempts") else 0.0,
            "fast_1": float(correct and best is not None and best > 1.0),
            "fast_1_5": float(correct and best is not None and best > 1.5),
            "log_speedup": math.log(best) if best else None, "log_draft_speedup": math.log(draft) if draft else None,
            "draft_speedup_source": o.get("draft_speedup_source"),
            "correct_kernels": int(o.get("n_correct_kernels") or 0), "tokens": int(o.get("tokens") or 0),
            "cost_usd": float(o.get("cost_usd") or 0.0), "llm_calls": int(o.get("llm_calls") or 0),
            "machine_outcomes": int(per_task_machine.get(task, 0)), "latency_not_measured": unmeasured,
        })
    return pl.DataFrame(rows, schema_overrides={"log_speedup": pl.Float64, "log_draft_speedup": pl.Float64,
                                                "draft_speedup_source": pl.String})


def summarise(per_task: pl.DataFrame, methods: Sequence[str]) -> pl.DataFrame:
    """Per method and metric: mean over tasks (seeds averaged first) with its bootstrap CI, and the
    paired difference from the first method."""
    by_task = per_task.group_by("method", "task_id").agg(
        *(pl.col(c).mean() for c, _ in SHARES + GEOMEANS), *(pl.col(c).sum() for c, _ in RATIOS),
        pl.col("correct_kernels").sum(), pl.col("llm_calls").mean(), pl.col("machine_outcomes").sum(),
        pl.col("latency_not_measured").all())
    tasks = sorted(per_task["task_id"].unique().to_list())
    column = {m: {t: r for t, r in ((r["task_id"], r) for r in by_task.filter(pl.col("method") == m).iter_rows(named=True))}
              for m in methods}
    reference = methods[0]
    rows = []
    for method in methods:
        cells = column[method]
        unmeasured = bool(cells) and all(cells[t]["latency_not_measured"] for t in cells)
        for key, label in SHARES + GEOMEANS + (("llm_calls", "LLM calls per task"),):
            values = [cells[t][key] if t in cells else None for t in tasks]
            interval, diff = mean_ci(values), paired_diff_ci(values, [column[reference][t][key] if t in column[reference]
                                                                     else None for t in tasks])
            if key.startswith("log_"):
                interval, diff = _exp(interval), _exp(diff)
            rows.append(_row(method, key, label, interval, diff if method != reference else None,
                             unmeasured and key in LATENCY))
        for key, label in RATIOS:
            interval = ratio_ci([cells[t][key] for t in cells], [cells[t]["correct_kernels"] for t in cells])
            rows.append(_row(method, f"{key}_per_correct", label, interval, None, False))
        machine = sum(cells[t]["machine_outcomes"] for t in cells)
        rows.append(_row(method, "machine_outcomes", "the machine's outcomes (not judged)",
                         Interval(float(machine), None, None, len(cells)), None, False))
    return pl.DataFrame(rows)


def _exp(interval: Interval) -> Interval:
    f = (lambda v: None if v is None else math.exp(v))
    return Interval(f(interval.mean), f(interval.low), f(interval.high), interval.n)


def _row(method: str, metric: str, label: str, interval: Interval, diff: Interval | None, unmeasured: bool) -> dict:
    return {"method": method, "metric": metric, "label": label, "mean": None if unmeasured else interval.mean,
            "low": None if unmeasured else interval.low, "high": None if unmeasured else interval.high, "n": interval.n,
            "diff": None if unmeasured or diff is None else diff.mean,
            "diff_low": None if unmeasured or diff is None else diff.low,
            "diff_high": None if unmeasured or diff is None else diff.high, "not_measured": unmeasured}


def _cell(row: dict, ratio: bool) -> str:
    if row["not_measured"]:
        return NOT_MEASURED
    fmt = "{:.2f}x" if ratio else "{:.0f}" if row["metric"].startswith("tokens") else "{:.3f}"
    return Interval(row["mean"], row["low"], row["high"], row["n"]).text(fmt)


def markdown(summary: pl.DataFrame, methods: Sequence[str], runs: Sequence[RunRef], per_task: pl.DataFrame,
             title: str) -> str:
    rows = {(r["method"], r["metric"]): r for r in summary.iter_rows(named=True)}
    metrics = list(dict.fromkeys(summary["metric"].to_list()))
    labels = {r["metric"]: r["label"] for r in summary.iter_rows(named=True)}
    geo = {k for k, _ in GEOMEANS}
    lines = [f"# {title}", "", f"{len(methods)} methods x {len(set(r.seed for r in runs))} seeds x "
             f"{per_task['task_id'].n_unique()} tasks; each value: mean over tasks (seeds averaged first) "
             "[95% bootstrap CI over tasks].", "", "| metric | " + " | ".join(methods) + " |", "|---" * (len(methods) + 1) + "|"]
    for metric in metrics:
        lines.append(f"| {labels[metric]} | " + " | ".join(_cell(rows[(m, metric)], metric in geo) for m in methods) + " |")
    reference = methods[0]
    lines += ["", f"Difference from {reference}, paired by task [95% CI] (speedups: ratio of geomeans):", "",
              "| metric | " + " | ".join(methods[1:]) + " |", "|---" * len(methods) + "|"]
    for metric in metrics:
        cells = [rows[(m, metric)] for m in methods[1:]]
        if all(c["diff"] is None and not c["not_measured"] for c in cells):
            continue
        fmt = "{:.2f}x" if metric in geo else "{:+.3f}"
        lines.append(f"| {labels[metric]} | " + " | ".join(NOT_MEASURED if c["not_measured"] else Interval(
            c["diff"], c["diff_low"], c["diff_high"], c["n"]).text(fmt) for c in cells) + " |")
    sources = per_task["draft_speedup_source"].drop_nulls()
    if sources.len():
        measured = int(sources.is_in(["paired", "same kernel"]).sum())
        lines += ["", f"Speedup over first draft: {measured} of {sources.len()} (task, seed) ratios measured when the "
                  "task ended (the draft and the best kernel timed in the same rounds, or the best kernel is the draft: "
                  "exactly 1); the rest estimated from the two kernels' own verifications."]
    lines += ["", "Runs:", ""] + [f"- {r.method}, seed {r.seed}: campaign `{r.campaign_id}` in `{r.lake}` "
                                   f"({per_task.filter(pl.col('campaign_id') == r.campaign_id)['status'].first()})"
                                   for r in runs]
    return "\n".join(lines) + "\n"


def write_experiment_report(runs: Sequence[RunRef], tasks: Sequence[str], out: Path, title: str) -> Path:
    """Write experiment.md, experiment.parquet and per_task.parquet into ``out``; returns the .md path."""
    methods = list(dict.fromkeys(r.method for r in runs))
    per_task = pl.concat([run_rows(r, tasks) for r in runs], how="vertical_relaxed")
    summary = summarise(per_task, methods)
    out.mkdir(parents=True, exist_ok=True)
    for name, frame in (("experiment.parquet", summary), ("per_task.parquet", per_task)):
        tmp = out / f".{name}.{os.getpid()}.tmp"
        frame.write_parquet(tmp)
        os.replace(tmp, out / name)
    path = out / "experiment.md"
    tmp = out / f".experiment.md.{os.getpid()}.tmp"
    tmp.write_text(markdown(summary, methods, runs, per_task, title))
    os.replace(tmp, path)
    return path
