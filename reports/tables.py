"""The report's tables as plain typed data (title, headers, formatted cells), shared by the HTML
and Markdown renderers so both show the same numbers the same way.

Every speedup cell carries its interval: ``1.82x [1.68, 1.95]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import polars as pl

from reports.measured import attempts_cell, latency_cell
from reports.quality import QualityReport


@dataclass(frozen=True)
class Table:
    title: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str = ""
    failed_rows: tuple[int, ...] = ()  # indices of rows to show as failures


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def share(value: Any) -> str:
    return "–" if _missing(value) else f"{100 * value:.1f}%"


def number(value: Any, digits: int = 2) -> str:
    if _missing(value):
        return "–"
    if isinstance(value, int) or float(value).is_integer() and abs(value) >= 1000:
        return f"{int(value):,}"
    return f"{value:,.{digits}f}"


def speedup(value: Any, low: Any = None, high: Any = None) -> str:
    if _missing(value):
        return "–"
    text = f"{value:.2f}x"
    if not _missing(low) and not _missing(high):
        text += f" [{low:.2f}, {high:.2f}]"
    return text


Column = tuple[str, Callable[[Mapping[str, Any]], str]]

RESULT_COLUMNS: tuple[Column, ...] = (
    ("tasks", lambda r: number(r["n_tasks"])),
    ("attempts", lambda r: attempts_cell(r, number(r["n_attempts"]))),
    ("compile (tasks)", lambda r: share(r["compile_rate_tasks"])),
    ("correct (tasks)", lambda r: share(r["correct_rate_tasks"])),
    ("compile / attempt", lambda r: share(r["compile_rate_attempts"])),
    ("correct / attempt", lambda r: share(r["correct_rate_attempts"])),
    ("fast_1", latency_cell(lambda r: share(r["fast_1"]))),
    ("fast_1.5", latency_cell(lambda r: share(r["fast_1_5"]))),
    ("fast_2", latency_cell(lambda r: share(r["fast_2"]))),
    ("speedup vs PyTorch, geomean [CI]", latency_cell(lambda r: speedup(
        r["speedup_geomean"], r["speedup_geomean_ci_low"], r["speedup_geomean_ci_high"]))),
    ("speedup vs first draft, median [CI]", latency_cell(lambda r: speedup(
        r["draft_speedup_median"], r["draft_speedup_median_ci_low"], r["draft_speedup_median_ci_high"]))),
    ("draft speedup IQR", latency_cell(lambda r: "–" if _missing(r["draft_speedup_q1"])
        else f"{r['draft_speedup_q1']:.2f}–{r['draft_speedup_q3']:.2f}")),
    ("attempts to first feasible (median)", lambda r: number(r["iterations_to_first_feasible_median"], 1)),
    ("flagged timings: noisy (counted at CI low) / implausible (left out)",
     lambda r: f"{number(r['n_flagged_best'], 0)} / {number(r.get('n_implausible_tasks'), 0)}"),
)
FLAGS_NOTE = ("Flagged timings: a noisy one (round-to-round spread above 25%: a loaded machine) counts in every "
              "speedup figure at the conservative end of its 95% CI, not its median (the low end for a best "
              "kernel, the high end for the first draft a gain is measured from); one faster than this machine's "
              "roofline allows (or beyond the plausibility bound where no roofline exists) is left out.")
COST_COLUMNS: tuple[Column, ...] = (
    ("LLM calls", lambda r: number(r["llm_calls"], 0)),
    ("tokens", lambda r: number(r["tokens"], 0) + (f" ({number(r['estimated_tokens'], 0)} estimated)"
                                                   if r.get("estimated_tokens") else "")),
    ("cost (USD)", lambda r: number(r["cost_usd"], 4)),
    ("verifier s", lambda r: number(r["verify_seconds"], 1)),
    ("correct kernels", lambda r: number(r["n_correct_kernels"], 0)),
    ("LLM calls / correct", lambda r: number(r["llm_calls_per_correct_kernel"], 1)),
    ("tokens / correct", lambda r: number(r["tokens_per_correct_kernel"], 0)),
    ("USD / correct", lambda r: number(r["cost_usd_per_correct_kernel"], 4)),
    ("verifier s / correct", lambda r: number(r["verify_seconds_per_correct_kernel"], 1)),
)


def _label(row: Mapping[str, Any]) -> str:
    parts = [row.get("method"), row.get("model")]
    detail = " · ".join(str(p) for p in parts if p)
    return f"{row['campaign_id']} ({detail})" if detail else str(row["campaign_id"])


def comparison_tables(overall: pl.DataFrame) -> tuple[Table, ...]:
    """The campaigns side by side: results, then cost (the key tables of summary.md)."""
    rows = [r for r in overall.iter_rows(named=True) if r.get("n_tasks") is not None]
    results = Table(
        "Campaigns compared: correctness and speed",
        ("campaign", *(name for name, _ in RESULT_COLUMNS)),
        tuple((_label(r), *(fmt(r) for _, fmt in RESULT_COLUMNS)) for r in rows),
        "Task shares have all the campaign's tasks in the denominator; intervals come from the verifier's CIs. "
        + FLAGS_NOTE,
    )
    cost = Table(
        "Campaigns compared: cost",
        ("campaign", *(name for name, _ in COST_COLUMNS)),
        tuple((_label(r), *(fmt(r) for _, fmt in COST_COLUMNS)) for r in rows),
    )
    return results, cost


def headline_lines(overall: pl.DataFrame) -> tuple[str, ...]:
    """One sentence per campaign saying what it achieved: correct kernels, how many beat PyTorch and
    by how much (counted speedups: see FLAGS_NOTE), and the gain over the first correct draft."""
    lines = []
    for r in overall.iter_rows(named=True):
        if not r.get("n_tasks"):
            continue
        n = int(r["n_tasks"])
        correct, faster = round(n * (r["correct_rate_tasks"] or 0)), round(n * (r["fast_1"] or 0))
        budget = f" within {r['budget']} attempts each" if r.get("budget") else ""
        text = f"{r['campaign_id']}: {correct} of {n} tasks got a correct kernel{budget}; {faster} of {n} beat PyTorch"
        if not _missing(r["speedup_geomean"]):
            text += f"; the best kernels run {r['speedup_geomean']:.2f}x PyTorch's speed (geomean)"
        if not _missing(r["draft_speedup_median"]):
            text += f" and {r['draft_speedup_median']:.2f}x their first correct draft's (median)"
        lines.append(text + ".")
    return tuple(lines)


def breakdown_table(groups: pl.DataFrame, campaign_id: str) -> Table:
    """One campaign per level and per category."""
    frame = groups.filter((pl.col("campaign_id") == campaign_id) & (pl.col("group_kind") != "all"))
    keep = RESULT_COLUMNS[:4] + RESULT_COLUMNS[6:11]
    return Table(
        f"{campaign_id}: per level and category",
        ("group", *(name for name, _ in keep)),
        tuple((r["group_name"], *(fmt(r) for _, fmt in keep)) for r in frame.iter_rows(named=True)),
    )


def best_kernels_table(speedups: pl.DataFrame, limit: int = 25) -> Table:
    rows = [
        (r["campaign_id"], r["task_id"], str(r["category"]),
         speedup(r["best_measured_speedup"], r["best_ci_low"], r["best_ci_high"]) + _flag_note(r),
         speedup(r["draft_speedup"], r["draft_speedup_ci_low"], r["draft_speedup_ci_high"]))
        for r in speedups.head(limit).iter_rows(named=True)
    ]
    return Table("Best kernels per task", ("campaign", "task", "category", "vs PyTorch [CI]", "vs first draft [CI]"),
                 tuple(rows), f"Top {limit} by counted speedup (median and 95% CI as measured). {FLAGS_NOTE}")


def _flag_note(row: Mapping[str, Any]) -> str:
    if row.get("best_timing_flag") == "noisy":
        return f" (noisy timing: counted as {row['best_speedup']:.2f}x)"
    return ""


def provenance_table(items: pl.DataFrame) -> Table:
    rows = tuple(
        (r["campaign_id"], r["title"], str(r["kind"] or "?"), str(r["n_solves_in_context"]), str(r["n_solves_preceded"]))
        for r in items.iter_rows(named=True)
    )
    return Table("Items retrieved before first solves",
                 ("campaign", "item", "kind", "first solves with it in context", "first solves it preceded"), rows)


def first_solves_table(solves: pl.DataFrame, limit: int = 30) -> Table:
    rows = tuple(
        (r["campaign_id"], r["task_id"], str(r["solve_iteration"]), f"Q{r['solve_stage']}",
         ", ".join(r["items_in_solving_context"] or []) or "(no items)")
        for r in solves.head(limit).iter_rows(named=True)
    )
    return Table("First solves and their context",
                 ("campaign", "task", "iteration", "stage", "items in the solving prompt"), rows,
                 "Iterations are 0-based, as in the lake's attempts.iteration and the campaign's summary.")


def quality_table(quality: QualityReport) -> Table:
    rows, failed = [], []
    for index, outcome in enumerate(quality.outcomes):
        rows.append((outcome.table, outcome.description, "pass" if outcome.passed else "FAIL",
                     f"{outcome.rows_failed} of {outcome.rows_checked}", outcome.examples))
        if not outcome.passed:
            failed.append(index)
    return Table("Data quality (Great Expectations)",
                 ("table", "expectation", "result", "rows failing", "examples"), tuple(rows),
                 quality.error or "", tuple(failed))
