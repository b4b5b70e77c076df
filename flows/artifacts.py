"""What a campaign or report flow run leaves in the Prefect UI for the morning after: a markdown
summary with the key table, a table artifact of per-task results and a link to the HTML report.

Keys name a series, so that the UI's Artifacts page shows each series' latest run with the earlier
ones (one version per night) behind it: a campaign's series is its backend, method, model and build
(``campaign-cpu-evokernel-gpt-4o-mini-1a2b3c4d``, ``...-tasks``, ``...-report``), a report's is its
output directory (``report-nightly``, ``report-nightly-tasks``, ``report-nightly-html``). Every
artifact also belongs to its flow run. Prefect admits only lowercase letters, digits and dashes in a
key: :func:`artifact_key` makes one from any text.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact

from memory_lake.storage import parse as parse_lake
from reports.build import ReportResult
from reports.render import markdown_table
from reports.tables import Table

KEY_MAX = 96
# the best kernel is the one with the best paired speedup; its ms is its own time, not the lowest of any kernel
TASK_COLUMNS = ("task", "attempts", "feasible", "first feasible (iteration)", "best kernel's ms", "best kernel's speedup",
                "stop")


@dataclass(frozen=True)
class CampaignRun:
    """What the campaign flow knows at its end."""

    campaign_id: str
    backend: str
    method: str
    model: str
    build_hash: str
    budget: int
    seconds: float
    tasks: tuple[dict[str, Any], ...]  # evokernel.agent.campaign.TaskSummary as dicts, in run order
    report_html: str | None = None


@dataclass(frozen=True)
class PublishedKeys:
    summary: str
    tasks: str
    report: str | None


def artifact_key(*parts: str) -> str:
    """A Prefect artifact key from free text: lowercase letters, digits and single dashes; long keys
    keep a hash of the full text so two series never share one."""
    text = "-".join(parts)
    key = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "run"
    if len(key) > KEY_MAX:
        key = f"{key[:KEY_MAX - 9].rstrip('-')}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"
    return key


def campaign_series(run: CampaignRun) -> str:
    return artifact_key("campaign", run.backend, run.method, run.model, run.build_hash[:8])


def publish_campaign(run: CampaignRun) -> PublishedKeys:
    """The campaign's summary, per-task table and report link (inside its flow run)."""
    key = campaign_series(run)
    create_markdown_artifact(markdown=campaign_markdown(run), key=key,
                             description=f"campaign {run.campaign_id}: summary")
    create_table_artifact(table=[_json_row(t) for t in run.tasks], key=f"{key}-tasks",
                          description=f"campaign {run.campaign_id}: one row per task")
    report = _link(run.report_html, f"{key}-report", f"campaign {run.campaign_id}: report")
    return PublishedKeys(key, f"{key}-tasks", report)


def publish_report(result: ReportResult, lake: str, campaign_ids: Sequence[str] | None) -> PublishedKeys:
    """The report's key tables, per-task results and a link to its index.html (inside its flow run)."""
    key = artifact_key("report", Path(result.out).resolve().name)
    scope = ", ".join(campaign_ids) if campaign_ids else "all campaigns"
    create_markdown_artifact(markdown=report_markdown(result, lake, scope), key=key,
                             description=f"report of {scope}")
    create_table_artifact(table=[_json_row(t) for t in result.task_results], key=f"{key}-tasks",
                          description=f"report of {scope}: one row per campaign and task")
    html = _link(str(result.html_path), f"{key}-html", f"report of {scope}: index.html")
    return PublishedKeys(key, f"{key}-tasks", html)


def campaign_markdown(run: CampaignRun) -> str:
    tasks = run.tasks
    solved = [t for t in tasks if t.get("feasible")]
    speedups = [t["best_speedup"] for t in solved if t.get("best_speedup")]
    geomean = math.exp(sum(math.log(s) for s in speedups) / len(speedups)) if speedups else None
    lines = [f"# Campaign `{run.campaign_id}`", "",
             f"{run.backend} · method {run.method} · model {run.model} · build {run.build_hash} · "
             f"budget {run.budget} per task · {len(tasks)} tasks in {_duration(run.seconds)}", "",
             f"**{len(solved)}/{len(tasks)} tasks feasible** · {sum(t['attempts'] for t in tasks)} attempts"
             + (f" · best speedup over PyTorch, geomean of {len(speedups)} timed tasks: {geomean:.2f}x"
                if geomean else ""), "",
             markdown_table(Table("Tasks", TASK_COLUMNS, tuple(_task_cells(t) for t in tasks)))]
    if run.report_html:
        lines.append(f"Report: [{run.report_html}]({Path(run.report_html).resolve().as_uri()})")
    return "\n".join(lines) + "\n"


def report_markdown(result: ReportResult, lake: str, scope: str) -> str:
    quality = "passed" if result.expectations_passed else "**FAILED** (see the report)"
    lines = [f"# Report `{Path(result.out).resolve().name}`", "",
             f"Lake `{parse_lake(lake).label}` · {scope} · data quality {quality} · written in {result.seconds:.1f} s",
             ""]
    lines += [markdown_table(t) for t in result.key_tables] or ["No attempts for the selected campaigns yet.\n"]
    lines += [f"- missing: {m}" for m in result.missing]
    lines.append(f"\nReport: [{result.html_path}]({Path(result.html_path).resolve().as_uri()})")
    return "\n".join(lines) + "\n"


def _task_cells(t: dict[str, Any]) -> tuple[str, ...]:
    first = t.get("first_feasible_iteration")
    return (t["task_id"], str(t["attempts"]), "yes" if t.get("feasible") else "no",
            "-" if first is None else str(first),
            f"{t['best_ms']:.3f}" if t.get("best_ms") else "-",
            f"{t['best_speedup']:.2f}x" if t.get("best_speedup") else "-", str(t.get("stop_reason", "")))


def _json_row(row: dict[str, Any]) -> dict[str, Any]:
    """Cells Prefect can store as JSON: NaN and infinities become nulls, other values as they are."""
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()}


def _link(path: str | None, key: str, description: str) -> str | None:
    if not path or not Path(path).is_file():
        return None
    create_link_artifact(link=Path(path).resolve().as_uri(), link_text=Path(path).name, key=key,
                         description=description)
    return key


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m" if hours else f"{minutes}m {secs:02d}s" if minutes else f"{secs} s"
