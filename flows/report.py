"""The `report` flow: what a user reads the morning after a campaign (prefect.yaml deployment
`report`; the campaign flow calls it at the end). Wraps the same call as `evokernel report`, and
publishes the report's key tables, per-task results and a link to index.html as Prefect artifacts
(flows/artifacts.py), so the team finds them in the UI where the run was scheduled."""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger

from flows.artifacts import publish_report
from tasks.report import write_report_task


@flow(name="report", log_prints=False)
def report(lake: str, out: str, campaign_ids: list[str] | None = None) -> dict[str, Any]:
    """Write the report of ``campaign_ids`` (all campaigns when None) from ``lake`` into ``out``."""
    logger = get_run_logger()
    result = write_report_task(lake, out, campaign_ids)
    logger.info("report written to %s in %.1f s; data quality %s", result.html_path, result.seconds,
                "passed" if result.expectations_passed else "FAILED")
    for line in result.missing:
        logger.warning("missing: %s", line)
    keys = publish_report(result, lake, campaign_ids)
    return {
        "html": str(result.html_path),
        "summary": str(result.summary_path),
        "metrics": str(result.metrics_path),
        "expectations_passed": result.expectations_passed,
        "missing": list(result.missing),
        "seconds": round(result.seconds, 3),
        "artifacts": [k for k in (keys.summary, keys.tasks, keys.report) if k],
    }
