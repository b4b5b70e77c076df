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

PYTORCH_HEADER = "speedup vs PyTorch: geomean of best kernels' medians [geomean of their 95% CI bounds]"
DRAFT_HEADER = "speedup vs first draft: median over tasks [median of per-task 95% CI bounds]"
RESULT_COLUMNS: tuple[Column, ...] = (
    ("tasks", lambda r: number(r["n_tasks"])),
    ("attempts", lambda r: attempts_cell(r, number(r["n_attempts"]))),
    ("compile (tasks)", lambda r: share(r["compile_rate_tasks"])),
    ("correct (tasks)", lambda r: share(r["correct_rate_tasks"])),
    ("compile / attempt", lambda r: share(r["compile_rate_attempts"])),
    ("correct / attempt", lambda r: share(r["correct_rate_attempts"])),
    ("fast_1 (median > 1)", latency_cell(lambda r: share(r["fast_1"]))),
    ("fast_1.5", latency_cell(lambda r: share(r["fast_1_5"]))),
    ("fast_2", latency_cell(lambda r: share(r["fast_2"]))),
    ("fast_1, conservative bound (95% CI low > 1)", latency_cell(lambda r: share(r.get("fast_1_ci_low")))),
    (PYTORCH_HEADER, latency_cell(lambda r: speedup(
        r["speedup_geomean"], r["speedup_geomean_ci_low"], r["speedup_geomean_ci_high"]))),
    (DRAFT_HEADER, latency_cell(lambda r: speedup(
        r["draft_speedup_median"], r["draft_speedup_median_ci_low"], r["draft_speedup_median_ci_high"])
        + (f" ({note})" if (note := _measured_note(r)) else ""))),
    ("speedup vs first draft: IQR over tasks", latency_cell(lambda r: "–" if _missing(r["draft_speedup_q1"])
        else f"{r['draft_speedup_q1']:.2f}–{r['draft_speedup_q3']:.2f}")),
    ("attempts to first feasible (median)", lambda r: number(r["iterations_to_first_feasible_median"], 1)),
    ("flagged timings: noisy (median counted, CI wide) / implausible (not counted)",
     lambda r: f"{number(r['n_flagged_best'], 0)} / {number(r.get('n_implausible_tasks'), 0)}"),
)
SPEEDUP_NOTE = ("Speedup vs PyTorch of a kernel: the median over rounds of reference time / candidate time, both "
                "timed in each round of one verification, with its 95% bootstrap CI. A task's best kernel: the "
                "feasible kernel with the highest such median whose timing was not flagged implausible (the "
                "campaign log and the lake use the same definition). Speedup vs first draft: the best kernel over "
                "the task's first feasible draft, both timed in the same rounds when the task ended (its own CI; "
                "exactly 1 when the best kernel is the draft); where that paired run is missing, the ratio of the "
                "two medians from their own verifications, with the conservative interval best CI low / draft CI "
                "high .. best CI high / draft CI low.")
FLAGS_NOTE = ("Flagged timings: a noisy one (round-to-round spread above 25%: a loaded machine) counts at its "
              "median and shows a wide CI; one faster than this machine's roofline allows (or beyond the "
              "plausibility bound where no roofline exists) is not counted.")


def _measured_note(row: Mapping[str, Any]) -> str:
    n, measured = row.get("n_draft_speedup_tasks"), row.get("n_draft_speedup_measured")
    if not n:
        return ""
    return f"{measured or 0} of {n} measured: one paired run, or the best kernel is the draft"


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
        "Task shares have all the campaign's tasks in the denominator; per-attempt rates count every judged "
        "attempt. " + SPEEDUP_NOTE + " " + FLAGS_NOTE,
    )
    cost = Table(
        "Campaigns compared: cost",
        ("campaign", *(name for name, _ in COST_COLUMNS)),
        tuple((_label(r), *(fmt(r) for _, fmt in COST_COLUMNS)) for r in rows),
    )
    return results, cost


def headline_lines(overall: pl.DataFrame) -> tuple[str, ...]:
    """One sentence per campaign saying what it achieved: correct kernels, how many beat PyTorch and
    by how much (medians with their CIs: see SPEEDUP_NOTE), and the gain over the first correct draft."""
    lines = []
    for r in overall.iter_rows(named=True):
        if not r.get("n_tasks"):
            continue
        n = int(r["n_tasks"])
        correct, faster = round(n * (r["correct_rate_tasks"] or 0)), round(n * (r["fast_1"] or 0))
        budget = f" within {r['budget']} attempts each" if r.get("budget") else ""
        text = (f"{r['campaign_id']}: {correct} of {n} tasks got a correct kernel{budget}; {faster} of {n} beat "
                "PyTorch (best kernel's median speedup > 1)")
        if not _missing(r["speedup_geomean"]):
            text += (f"; the best kernels run {speedup(r['speedup_geomean'], r['speedup_geomean_ci_low'], r['speedup_geomean_ci_high'])} "
                     "PyTorch's speed (geomean of medians [of their 95% CI bounds])")
        if not _missing(r["draft_speedup_median"]):
            text += (f" and {speedup(r['draft_speedup_median'], r['draft_speedup_median_ci_low'], r['draft_speedup_median_ci_high'])} "
                     f"their first correct draft's (median over tasks; {_measured_note(r)})")
        lines.append(text + ".")
    return tuple(lines)


def breakdown_table(groups: pl.DataFrame, campaign_id: str) -> Table:
    """One campaign per level and per category."""
    frame = groups.filter((pl.col("campaign_id") == campaign_id) & (pl.col("group_kind") != "all"))
    keep = RESULT_COLUMNS[:12]
    return Table(
        f"{campaign_id}: per level and category",
        ("group", *(name for name, _ in keep)),
        tuple((r["group_name"], *(fmt(r) for _, fmt in keep)) for r in frame.iter_rows(named=True)),
        SPEEDUP_NOTE,
    )


def best_kernels_table(speedups: pl.DataFrame, limit: int = 25) -> Table:
    rows = [
        (r["campaign_id"], r["task_id"], str(r["category"]),
         speedup(r["best_speedup"], r["best_ci_low"], r["best_ci_high"]) + _flag_note(r),
         speedup(r["draft_speedup"], r["draft_speedup_ci_low"], r["draft_speedup_ci_high"]),
         SOURCES.get(r.get("draft_speedup_source") or "", "–"))
        for r in speedups.head(limit).iter_rows(named=True)
    ]
    return Table("Best kernels per task",
                 ("campaign", "task", "category", "vs PyTorch: median [95% CI]", "vs first draft: ratio [95% CI]",
                  "how the ratio vs first draft was measured"),
                 tuple(rows), f"Top {limit} by median speedup. {SPEEDUP_NOTE} {FLAGS_NOTE}")


SOURCES = {"paired": "draft and best timed in the same rounds (median of per-round ratios)",
           "same kernel": "the best kernel is the draft (exactly 1)",
           "separate verifications": "estimate: ratio of medians from two verifications; conservative bound as CI"}


SHORT_SOURCES = {"paired": " (one paired run)", "same kernel": " (the draft itself)",
                 "separate verifications": " (estimate from two runs)"}


def _flag_note(row: Mapping[str, Any]) -> str:
    return " (noisy timing)" if row.get("best_timing_flag") == "noisy" else ""


def task_table(outcomes: pl.DataFrame, limit: int = 60) -> Table:
    """Per task: attempts, compile and correctness per attempt, the best kernel and its gain."""
    rows = tuple(
        (r["campaign_id"], r["task_id"], number(r["n_attempts"]), f"{r['n_compiled']} ({share(r['n_compiled'] / r['n_attempts'])})",
         f"{r['n_correct']} ({share(r['n_correct'] / r['n_attempts'])})",
         "–" if r["first_feasible_iteration"] is None else str(r["first_feasible_iteration"]),
         speedup(r["best_speedup"], r["best_ci_low"], r["best_ci_high"]),
         speedup(r["draft_speedup"], r["draft_speedup_ci_low"], r["draft_speedup_ci_high"])
         + SHORT_SOURCES.get(r.get("draft_speedup_source") or "", ""))
        for r in outcomes.head(limit).iter_rows(named=True) if r["n_attempts"])
    return Table("Per task: compile rate and correctness per attempt, best kernel",
                 ("campaign", "task", "attempts", "compiled (per attempt)", "correct (per attempt)",
                  "first feasible iteration", "best vs PyTorch: median [95% CI]", "best vs first draft [95% CI]"),
                 rows, "Iterations are 0-based. " + SPEEDUP_NOTE)


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
