"""The report's public entry: read a lake, compute metrics, check data quality, draw, write.

``write_report(lake_root, out, campaign_ids, as_of)`` writes ``out/index.html`` (self-contained),
``out/summary.md`` (+ ``out/figures/*.png`` it links), and ``out/metrics.parquet`` (the long table of
every number behind the report). Each file is written under a temporary name and renamed. An
empty or partial lake gives a report that says what is missing; only a path that holds no lake
at all is an error (``ReportError``, one line).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

import duckdb

from reports.inventory import inspect_lake
from reports.metrics import compute_metrics
from reports.plots import all_figures
from reports.quality import check_lake_quality
from reports.render import FIGURES_DIR, ReportContent, render_html, render_markdown
from reports.tables import Table

# The per-task columns a report hands to its callers (the report flow's table artifact).
TASK_RESULT_COLUMNS = ("campaign_id", "task_id", "level", "category", "n_attempts", "n_feasible",
                       "first_feasible_iteration", "best_ms", "best_speedup", "draft_speedup", "tokens", "cost_usd")


class ReportError(Exception):
    """The report cannot be written (no lake at the path, output not writable); one line."""


@dataclass(frozen=True)
class ReportResult:
    out: Path
    html_path: Path
    summary_path: Path
    metrics_path: Path
    expectations_passed: bool
    missing: tuple[str, ...]
    seconds: float
    key_tables: tuple[Table, ...] = ()  # the campaigns compared (the key tables of summary.md)
    task_results: tuple[dict[str, Any], ...] = ()  # one row per (campaign, task): TASK_RESULT_COLUMNS


def open_lake_connection(lake_root: str | Path, as_of: str | None = None) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with the lake attached (as of a snapshot id or timestamp when given);
    ReportError when there is no lake at the path."""
    from memory_lake import Lake, LakeError

    try:
        with Lake.open(str(lake_root)) as lake:
            return lake.connect(as_of)
    except LakeError as exc:
        raise ReportError(str(exc)) from None


def build_content(con: duckdb.DuckDBPyConnection, lake_label: str,
                  campaign_ids: Sequence[str] | None = None) -> ReportContent:
    """Everything a report shows, from any connection with the lake's views."""
    inventory = inspect_lake(con)
    metrics = compute_metrics(con, campaign_ids)
    missing = list(inventory.missing)
    for row in metrics.campaigns.iter_rows(named=True):
        if row["n_attempts"] == 0:
            missing.append(f"campaign {row['campaign_id']}: no attempts in the lake")
        if not row["has_campaign_row"]:
            missing.append(f"campaign {row['campaign_id']}: no campaigns row (method, model and budget unknown)")
    if not metrics.campaign_ids:
        missing.append("campaigns: the lake holds no campaign yet")
    return ReportContent(
        lake_root=lake_label,
        generated_at=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        metrics=metrics,
        quality=check_lake_quality(con, metrics.campaign_ids),
        missing=tuple(dict.fromkeys(missing)),
        figures=all_figures(metrics),
    )


def write_report(lake_root: str | Path, out: Path, campaign_ids: Sequence[str] | None = None,
                 as_of: str | None = None) -> ReportResult:
    """Write index.html, summary.md (+ figures/) and metrics.parquet for the lake's campaigns,
    for the memory as it is or, with ``as_of``, as it was at that snapshot id or timestamp."""
    started = time.perf_counter()
    out = Path(out)
    con = open_lake_connection(lake_root, as_of)
    try:
        label = str(lake_root) if as_of is None else f"{lake_root} as of {as_of}"
        content = build_content(con, label, campaign_ids)
    except duckdb.Error as exc:  # e.g. a damaged (truncated) Parquet file of the lake: DuckDB names it
        raise ReportError(f"{lake_root}: cannot read the lake: {_first_line(exc)}") from None
    finally:
        con.close()
    try:
        paths = _write_outputs(content, out)
    except OSError as exc:
        raise ReportError(f"{out}: cannot write the report ({exc.strerror or exc})") from None
    return ReportResult(
        out=out, html_path=paths[0], summary_path=paths[1], metrics_path=paths[2],
        expectations_passed=content.quality.passed, missing=content.missing,
        seconds=time.perf_counter() - started,
        key_tables=content.tables()[:2] if content.metrics.has_attempts else (),
        task_results=tuple(content.metrics.task_outcomes.select(TASK_RESULT_COLUMNS).to_dicts()),
    )


def _write_outputs(content: ReportContent, out: Path) -> tuple[Path, Path, Path]:
    (out / FIGURES_DIR).mkdir(parents=True, exist_ok=True)
    for figure in content.figures:
        _atomic_write(out / FIGURES_DIR / f"{figure.name}.png", figure.png)
    metrics_path = out / "metrics.parquet"
    tmp = metrics_path.with_name(f".{metrics_path.name}.{os.getpid()}.tmp")
    content.metrics.to_long().write_parquet(tmp)
    os.replace(tmp, metrics_path)
    summary_path = _atomic_write(out / "summary.md", render_markdown(content).encode())
    html_path = _atomic_write(out / "index.html", render_html(content).encode())
    return html_path, summary_path, metrics_path


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _atomic_write(path: Path, payload: bytes) -> Path:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(payload)
    os.replace(tmp, path)
    return path
