"""Prefect task wrapper of the report: ``reports.build.write_report`` with the defaults of
``tasks.defaults.REPORT_TASK`` (no retries, no caching: the lake changes between runs)."""

from __future__ import annotations

from pathlib import Path

from prefect import task

from reports.build import ReportResult, write_report
from tasks.defaults import REPORT_TASK


@task(name="write-report", **REPORT_TASK)
def write_report_task(lake: str, out: str, campaign_ids: list[str] | None = None) -> ReportResult:
    """Write index.html, summary.md and metrics.parquet for the lake's campaigns."""
    return write_report(Path(lake), Path(out), campaign_ids)
