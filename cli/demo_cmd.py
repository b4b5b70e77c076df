"""`evokernel demo`: the README's main job, offline on a fresh machine.

Builds the bundled CPU benchmark, runs a short campaign on four tasks with the scripted provider
(responses written for this project, labelled as such: drafts that fail the hack, compile and
correctness gates, then refinements that beat PyTorch; evokernel/demo/make_script.py) with real
compilation, real verification and a real lake, then writes the report.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path

import typer

from cli.errors import fail
from evokernel.demo.make_script import BUDGET as DEMO_BUDGET
from evokernel.demo.make_script import PLAN

DEMO_TASKS = tuple(PLAN)
# fewer timing rounds than a real campaign (30): the demo shows the loop, not publication figures
DEMO_SETTINGS = {"latency_rounds": 10}


def register(app: typer.Typer) -> None:
    @app.command("demo")
    def demo(
        out: Path = typer.Option(Path("runs/demo"), "--out", help="where the build, lake and report go"),
        budget: int = typer.Option(DEMO_BUDGET, "--budget", help="iterations per task"),
        llm: str = typer.Option("scripted:demo", "--llm", help="the scripted demo, or a real model spec"),
    ) -> None:
        """Build the bundled CPU benchmark and run a short scripted campaign with a report (offline)."""
        from cli.campaign_cmd import print_summary, run_campaign_cli
        from kernelbench_npu.build import build_benchmark

        from cli.inputs import InputError
        from cli.inputs_out import output_dir

        try:
            output_dir(out, holds="the demo's output (build/, lake/, report/)")
        except InputError as exc:
            fail(str(exc))
        started = time.perf_counter()
        typer.echo(f"[1/3] building the bundled CPU benchmark into {out / 'build'}")
        summary = build_benchmark("cpu", out=out / "build", progress=None)
        typer.echo(f"      {summary.ok} tasks ok, hash {summary.build_hash} ({summary.seconds:.0f} s)")
        if llm.startswith("scripted:"):
            typer.echo("[2/3] campaign with the SCRIPTED demo provider: responses written for EvoKernel, "
                       "not produced by a model")
        else:
            typer.echo(f"[2/3] campaign with {llm}")
        campaign_id = "demo-" + datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
        result = run_campaign_cli(build=out / "build", lake=out / "lake", llm=llm, method="evokernel",
                                  budget=budget, tasks=list(DEMO_TASKS), campaign_id=campaign_id,
                                  order="given", report=out / "report", config_file=None,
                                  settings_overrides=DEMO_SETTINGS)
        print_summary(result)
        typer.echo(f"[3/3] report: {out / 'report' / 'index.html'} and {out / 'report' / 'summary.md'}")
        for line in headline(out / "report" / "summary.md"):
            typer.echo(f"      {line}")
        typer.echo(f"demo finished in {time.perf_counter() - started:.0f} s; query the lake with: "
                   f"evokernel lake query --lake {out / 'lake'} \"SELECT * FROM attempts\"")


def headline(summary: Path) -> list[str]:
    """The report's headline (summary.md's quoted lines under its title), for the terminal."""
    if not summary.is_file():
        return []
    return [line[2:] for line in summary.read_text().splitlines() if line.startswith("> ")]
