"""`evokernel report`: write a lake's report (index.html, summary.md, metrics.parquet).

Calls ``reports.build.write_report`` directly (the `report` Prefect flow wraps the same call for
deployments and the campaign flow), so the command needs no Prefect server and starts fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from cli import inputs_lake
from cli.errors import EXIT_FAILED, fail, one_line_errors
from cli.inputs import InputError, split_list
from cli.inputs_out import output_dir


def register(app: typer.Typer) -> None:
    @app.command("report")
    def report(
        lake: str = typer.Option(..., "--lake", help="memory lake directory, or ducklake:postgres:<conninfo>"),
        out: Path = typer.Option(..., "--out", help="output directory (index.html, summary.md, metrics.parquet)"),
        campaign: Optional[List[str]] = typer.Option(
            None, "--campaign", help="campaign id to include (repeatable or comma-separated); default: all"),
        strict: bool = typer.Option(False, "--strict", help="exit 1 when a data-quality expectation fails"),
        as_of: Optional[str] = typer.Option(None, "--as-of", help="report the memory as it was at a snapshot id "
                                            "or timestamp (`evokernel lake snapshots`), e.g. before a campaign"),
    ) -> None:
        """Report campaigns side by side: metrics, learning curves, Q trajectories, data quality."""
        campaign_ids = split_list(campaign)
        with one_line_errors(InputError):  # every input, before the report is computed
            inputs_lake.lake_path(lake, must_exist=True)
            output_dir(out, holds="the report (index.html, summary.md, ...)")
            inputs_lake.known_campaigns(lake, campaign_ids)
        from reports.build import ReportError, write_report

        try:
            result = write_report(lake, out, campaign_ids or None, as_of)
        except ReportError as exc:
            fail(str(exc).splitlines()[0] if str(exc) else "report failed")
            return
        typer.echo(f"report: {result.html_path}")
        typer.echo(f"summary: {result.summary_path}")
        typer.echo(f"metrics: {result.metrics_path}")
        typer.echo(f"data quality: {'passed' if result.expectations_passed else 'FAILED (see the report)'}")
        for line in result.missing:
            typer.echo(f"missing: {line}")
        typer.echo(f"written in {result.seconds:.1f} s")
        if strict and not result.expectations_passed:
            raise typer.Exit(EXIT_FAILED)
