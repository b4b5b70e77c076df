"""`evokernel campaign`: run (or resume) a synthesis campaign through the Prefect `campaign` flow,
on one Prefect API (the configured one, or a server started for the campaign, which every Dask
worker then reports to), with a progress bar read from the lake; prints a per-task summary."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import List, Optional

import typer

from cli.errors import fail
from cli.inputs import split_list


def register(app: typer.Typer) -> None:
    @app.command("campaign")
    def campaign(
        build: Path = typer.Option(..., "--build", help="benchmark build directory (evokernel build)"),
        lake: str = typer.Option(..., "--lake", help="memory lake directory (created if missing), or "
                                 "ducklake:postgres:<libpq conninfo>"),
        llm: str = typer.Option(..., "--llm", help="openai:MODEL | anthropic:MODEL | openai-compatible:MODEL@URL | scripted:FILE"),
        method: Optional[str] = typer.Option(None, "--method", help="evokernel | pass-at-k | refinement | heuristic | "
                                             "no-memory (evokernel with retrieval off); default: the settings', "
                                             "evokernel"),
        budget: Optional[int] = typer.Option(None, "--budget", help="iterations per task, shared by drafting and "
                                             "refining (default: the settings', 30)"),
        tasks: Optional[List[str]] = typer.Option(None, "--tasks", help="task ids (repeatable or comma-separated); default: all runnable"),
        campaign_id: Optional[str] = typer.Option(None, "--campaign-id", help="resume this campaign, or name a new one"),
        order: str = typer.Option("level", "--order", help="level (L1 before L2) | given"),
        report: Optional[Path] = typer.Option(None, "--report", help="write the campaign's report here at the end"),
        config_file: Optional[Path] = typer.Option(None, "--config", help="TOML settings file"),
        parallel_tasks: Optional[int] = typer.Option(None, "--parallel-tasks", help="same-level tasks run at once"),
        dask_address: Optional[str] = typer.Option(None, "--dask-address", help="run tasks on the Dask scheduler "
                                                   "at tcp://HOST:PORT (implies EVOKERNEL_TASK_RUNNER=dask)"),
        retry_empty_distillations: bool = typer.Option(
            False, "--retry-empty-distillations", help="ask again for the distillations that stored no lesson (the "
            "answer held none in the expected form; llm_calls.items_stored = 0); by default a task is distilled "
            "once per campaign, so a rerun of a finished campaign calls no LLM (setting retry_empty_distillations)"),
    ) -> None:
        """Draft and refine kernels for the build's tasks, sharing one memory; resumable by id."""
        task_ids = split_list(tasks)
        overrides = {"parallel_tasks": parallel_tasks, "dask_address": dask_address,
                     "task_runner": "dask" if dask_address else None,
                     "retry_empty_distillations": True if retry_empty_distillations else None}
        result = run_campaign_cli(build=build, lake=lake, llm=llm, method=method, budget=budget,
                                  tasks=task_ids, campaign_id=campaign_id, order=order, report=report,
                                  config_file=config_file,
                                  settings_overrides={k: v for k, v in overrides.items() if v is not None} or None)
        print_summary(result)


def run_campaign_cli(**kwargs) -> dict:
    """Run the campaign flow on one Prefect API with a live progress bar read from the lake;
    one-line errors for expected failures. Every input, the LLM endpoint included, is checked first:
    nothing starts before. While the Prefect API starts, the first steps' LLM requests go out
    (evokernel.agent.head_start): the first request leaves within seconds, not after the server."""
    checked = _checked_inputs(kwargs)
    settings = checked.settings
    from cli.campaign_interrupt import refuse_running

    refuse_running(kwargs["lake"], kwargs.get("campaign_id"))
    kwargs["campaign_id"] = kwargs.get("campaign_id") or _new_campaign_id(settings.method, checked.model)
    head = _head_start(settings, kwargs)
    try:
        if head is not None:  # its requests out before Prefect's imports (seconds of one core, and the GIL)
            head.wait()
        return _run_flow(kwargs, settings)
    except KeyboardInterrupt:  # Ctrl-C before the campaign's handlers are installed (cli/campaign_interrupt.py)
        from cli.campaign_interrupt import interrupted_before_start

        interrupted_before_start(kwargs)
    finally:
        if head is not None:
            head.close()


def _new_campaign_id(method: str, model: str) -> str:
    from evokernel.agent.runtime import default_campaign_id

    return default_campaign_id(method, model)


def _head_start(settings, kwargs: dict):
    """The first wave's first requests, sent while the Prefect API starts (threads only: a Dask
    worker's task could not take an answer held in this process)."""
    if settings.task_runner == "dask":
        return None
    from evokernel.agent.head_start import HeadStart

    return HeadStart.begin(settings, kwargs["campaign_id"], kwargs.get("tasks") or (), kwargs["order"])


def _run_flow(kwargs: dict, settings) -> dict:
    from cli.campaign_interrupt import Interruptible, ended
    from cli.prefect_env import apply_prefect_defaults

    apply_prefect_defaults()
    from evokernel.agent.progress import listen
    from evokernel.agent.runtime import CampaignError
    from cli.progress_bar import CampaignProgress
    from evokernel.config import ConfigError
    from evokernel.llm.errors import LLMError
    from flows.campaign import campaign as campaign_flow
    from flows.campaign import make_task_runner
    from flows.prefect_api import shared_api
    from kernelbench_npu.spec import BuildError
    from memory_lake import LakeError

    params = {k: (str(v) if isinstance(v, Path) else v) for k, v in kwargs.items()}
    params.update(method=settings.method, budget=settings.budget)  # an option not given: env, config, default
    params["report_out"] = params.pop("report")
    params["tasks"] = params["tasks"] or None
    try:
        with Interruptible(kwargs) as handlers, shared_api() as api, \
                CampaignProgress(str(settings.lake)) as bar, listen(bar.on_event), listen(handlers.on_event):
            handlers.on_exit = bar.stop_display
            handlers.spare(api.server_pid)
            if api.started_here:
                bar.note(f"Prefect API for this campaign: {api.url} (runs kept under PREFECT_HOME)")
            runner = make_task_runner(settings.task_runner, settings.parallel_tasks, settings.dask_address)
            result = _flow_result(campaign_flow.with_options(task_runner=runner), params, handlers)
        gc.collect()  # free the flow's DuckDB objects now, not during interpreter teardown
        ended(result, kwargs, handlers)
        return result
    except (CampaignError, ConfigError, BuildError, LakeError, LLMError, ValueError) as exc:
        fail(str(exc).splitlines()[0])
    raise AssertionError("unreachable")


def _flow_result(flow, params: dict, handlers) -> dict:
    """The flow's result (a stopped campaign's too: see cli/campaign_interrupt.py); its exception re-raised."""
    try:
        result = flow(**params, return_state=True).result(raise_on_failure=False)
    except BaseException:
        handlers.wait_for_exit()  # interrupted: the watchdog ends the process
        raise
    if handlers.interrupted:
        handlers.wait_for_exit()
    if isinstance(result, BaseException):
        raise result
    return result


def _checked_inputs(kwargs: dict):
    """The campaign's settings and model, every input checked before a Prefect server starts or a
    lake is created (cli/inputs_campaign.py): one line naming the option, file or variable at fault."""
    from cli.inputs import InputError
    from cli.inputs_campaign import check_campaign
    from cli.inputs_out import output_dir

    try:
        if kwargs.get("report") is not None:
            output_dir(kwargs["report"], "--report", holds="the report (index.html, summary.md, ...)")
        return check_campaign(**{k: kwargs.get(k) for k in CHECKED})
    except InputError as exc:
        fail(str(exc))


CHECKED = ("build", "lake", "llm", "method", "budget", "tasks", "campaign_id", "order", "config_file",
           "settings_overrides")


def print_summary(result: dict) -> None:
    """Per task: attempts, whether a feasible kernel was found, the iteration of the first one
    (0-based, as in the lake), and the best kernel (by speedup over PyTorch, each measured paired
    with the reference): its speedup and its own time (not the lowest time of any kernel)."""
    typer.echo(f"\ncampaign {result['campaign_id']}")
    typer.echo(f"{'task':34} {'attempts':>8} {'feasible':>8} {'first':>5} {'speedup':>8} {'its ms':>10}  stop")
    for t in result["tasks"]:
        best = f"{t['best_ms']:.3f}" if t["best_ms"] else "-"
        speed = f"{t['best_speedup']:.2f}x" if t["best_speedup"] else "-"
        first = "-" if t["first_feasible_iteration"] is None else str(t["first_feasible_iteration"])
        typer.echo(f"{t['task_id']:34} {t['attempts']:>8} {str(t['feasible']):>8} {first:>5} {speed:>8} {best:>10}  "
                   f"{t['stop_reason']}")
    typer.echo("first: iteration of the first feasible kernel (0-based); speedup: the best kernel's over PyTorch "
               "(median over rounds of the per-round ratio), paired in its own verification; its ms: that kernel's "
               "median time; the best kernel is the one the report and the lake name (memory_lake/sql/best_kernels.sql)")
    report = result.get("report")
    if report:  # the report flow's result: its paths, data quality, ...
        typer.echo(f"report: {report.get('html', report) if isinstance(report, dict) else report}")
