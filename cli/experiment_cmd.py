"""`evokernel experiment`: the paper's comparison as one command: methods x seeds on one build, each
run a campaign on its own copy of a starting lake with the same LLM-call budget per task, then one
side-by-side report with bootstrap intervals over tasks (flows/experiment.py; resumable by --out)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from cli.errors import fail


def _list(text: str | None) -> list[str]:
    return [t.strip() for t in (text or "").split(",") if t.strip()]


def register(app: typer.Typer) -> None:
    @app.command("experiment")
    def experiment(
        build: Path = typer.Option(..., "--build", help="benchmark build directory (evokernel build)"),
        llm: str = typer.Option(..., "--llm", help="openai:MODEL | anthropic:MODEL | openai-compatible:MODEL@URL | scripted:FILE"),
        out: Path = typer.Option(..., "--out", help="the experiment's directory (lakes, report); rerun to resume"),
        methods: str = typer.Option("evokernel,pass-at-k,refinement,heuristic,no-memory", "--methods",
                                    help="comma-separated; the first is the reference of the differences"),
        seeds: str = typer.Option("0,1", "--seeds", help="comma-separated integers: one run per method and seed"),
        llm_calls: int = typer.Option(30, "--llm-calls", help="LLM calls per task for every method (a method "
                                      "that distils spends one of them on it)"),
        tasks: Optional[str] = typer.Option(None, "--tasks", help="comma-separated task ids; default: all runnable"),
        start_lake: Optional[str] = typer.Option(None, "--start-lake", help="lake every run starts from (copied "
                                                 "per run, never written); default: a new lake each"),
        experiment_id: Optional[str] = typer.Option(None, "--id", help="names the runs' campaigns; default: --out's name"),
        order: str = typer.Option("level", "--order", help="level (L1 before L2) | given"),
        config_file: Optional[Path] = typer.Option(None, "--config", help="TOML settings for every run"),
        parallel_tasks: Optional[int] = typer.Option(None, "--parallel-tasks", help="same-level tasks run at once"),
    ) -> None:
        """Compare methods x seeds at equal LLM-call budget; one report with bootstrap CIs over tasks."""
        try:
            parsed_seeds = [int(s) for s in _list(seeds)]
        except ValueError:
            fail(f"--seeds {seeds!r}: give comma-separated integers")
        _check_out(out)
        overrides = {"parallel_tasks": parallel_tasks} if parallel_tasks else None
        result = run_experiment_cli(build=str(build), llm=llm, out=str(out), methods=_list(methods), seeds=parsed_seeds,
                                    llm_calls_per_task=llm_calls, tasks=_list(tasks) or None, start_lake=start_lake,
                                    experiment_id=experiment_id, order=order,
                                    config_file=str(config_file) if config_file else None, settings_overrides=overrides)
        typer.echo(Path(result["report"]).read_text())
        typer.echo(f"report: {result['report']} (and experiment.parquet, per_task.parquet beside it)")


def _check_out(out: Path) -> None:
    from cli.inputs import InputError
    from cli.inputs_out import output_dir

    try:
        output_dir(out, holds="the experiment (lakes/, report/, experiment.json)")
    except InputError as exc:
        fail(str(exc))


def _check_endpoint(spec: str) -> None:
    """The LLM endpoint answers, before a Prefect server starts (evokernel.llm.reach)."""
    from evokernel.llm.reach import endpoint_problem
    from evokernel.llm.registry import make_llm

    problem = endpoint_problem(make_llm(spec))
    if problem:
        fail(f"--llm {spec}: {problem}; nothing was started")


def run_experiment_cli(**params) -> dict:
    """Run the experiment flow on one Prefect API, printing each task's end; one-line errors."""
    from cli.prefect_env import apply_prefect_defaults

    apply_prefect_defaults()
    from evokernel.agent.experiment import ExperimentError, plan_experiment
    from evokernel.agent.progress import ProgressEvent, listen
    from evokernel.agent.runtime import CampaignError
    from evokernel.config import ConfigError
    from evokernel.llm.errors import LLMError
    from flows.experiment import experiment as experiment_flow
    from flows.prefect_api import shared_api
    from kernelbench_npu.spec import BuildError
    from memory_lake import LakeError

    def show(event: ProgressEvent) -> None:
        if event.kind == "campaign-start":
            typer.echo(f"run {event.campaign_id}: {event.total_steps // max(event.budget, 1)} task(s), "
                       f"{event.budget} generation(s) each")
        elif event.kind == "task-end":
            typer.echo(f"  {event.task_id}: {event.message}")

    errors = (ExperimentError, CampaignError, ConfigError, BuildError, LakeError, LLMError, ValueError)
    try:  # the plan's checks first, in one line, before a Prefect server starts
        plan_experiment(params["out"], params["build"], params["llm"], params["methods"], params["seeds"],
                        params["llm_calls_per_task"], params["tasks"] or (), params["start_lake"], params["experiment_id"])
        _check_endpoint(params["llm"])
        with shared_api() as api, listen(show):
            if api.started_here:
                typer.echo(f"Prefect API for this experiment: {api.url} (runs kept under PREFECT_HOME)")
            return experiment_flow(**params)
    except errors as exc:
        fail(str(exc).splitlines()[0])
    raise AssertionError("unreachable")
