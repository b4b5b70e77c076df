"""The `campaign` flow: draft and refine every task of a build with one shared memory, then report.

Tasks run in waves: consecutive tasks of the same level, up to ``parallel_tasks`` at a time, are
submitted to the flow's task runner (threads by default, Dask for a cluster); levels stay in order,
so level 1's memory is there before level 2 starts. Each benchmark task is one Prefect task
(tasks/campaign.py) whose LLM calls and verifications are nested tasks; every task in this process
shares the flow's runtime (evokernel.agent.runtime.runtime_for), a Dask worker opens its own once.
Resumable: rerun with the same campaign id to continue from what the lake holds. No Prefect server
is needed (ephemeral API) unless PREFECT_API_URL is set.
"""

from __future__ import annotations

from itertools import groupby
from typing import Any, Sequence

from prefect import flow, get_run_logger
from prefect.task_runners import ThreadPoolTaskRunner

from evokernel.agent.campaign import plan_tasks, record_campaign
from evokernel.agent.progress import ProgressEvent, emit
from evokernel.agent.runtime import close_runtime, runtime_for
from evokernel.config import Settings, load_settings
from kernelbench_npu.spec import TaskSpec
from tasks.campaign import run_campaign_task


def make_task_runner(kind: str, workers: int):
    """threads (default) or dask (prefect-dask: a local cluster here, or point it at yours)."""
    if kind == "dask":
        from prefect_dask import DaskTaskRunner

        return DaskTaskRunner(cluster_kwargs={"n_workers": workers, "threads_per_worker": 1,
                                              "processes": True, "dashboard_address": None})
    return ThreadPoolTaskRunner(max_workers=workers)


def task_waves(specs: Sequence[TaskSpec], width: int) -> list[tuple[TaskSpec, ...]]:
    """Consecutive same-level tasks in groups of at most ``width`` (levels never mix in a wave)."""
    waves: list[tuple[TaskSpec, ...]] = []
    for _level, group in groupby(specs, key=lambda t: t.level):
        tasks = tuple(group)
        waves += [tasks[i:i + width] for i in range(0, len(tasks), width)]
    return waves


def campaign_settings(config_file: str | None, build: str, lake: str, llm: str, method: str, budget: int,
                      overrides: dict[str, Any] | None) -> Settings:
    return load_settings(config_file, **{**(overrides or {}), "build": build, "lake": lake, "llm": llm,
                                         "method": method, "budget": budget})


# Waves bound the concurrency to ``parallel_tasks``; the pool is only an upper limit. For Dask, call
# ``campaign.with_options(task_runner=make_task_runner("dask", n))`` (the CLI does, from settings).
@flow(name="campaign", task_runner=ThreadPoolTaskRunner(max_workers=8))
def campaign(build: str, lake: str, llm: str, method: str = "evokernel", budget: int = 30,
             tasks: list[str] | None = None, campaign_id: str | None = None, order: str = "level",
             report_out: str | None = None, config_file: str | None = None,
             settings_overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    logger = get_run_logger()
    settings = campaign_settings(config_file, build, lake, llm, method, budget, settings_overrides)
    runtime = runtime_for(settings, campaign_id)  # creates the lake if new; refuses a mismatched resume
    ctx = runtime.ctx
    try:
        specs = plan_tasks(runtime.build, tasks or (), order)
        logger.info("campaign %s: %d tasks, budget %d, method %s, model %s, %d task(s) at a time",
                    ctx.campaign_id, len(specs), settings.budget, settings.method, ctx.model, settings.parallel_tasks)
        emit(ProgressEvent("campaign-start", ctx.campaign_id, total_steps=len(specs) * settings.budget))
        record_campaign(ctx, runtime.build, "running")
        payload = settings.model_dump(mode="json")
        summaries = []
        for wave in task_waves(specs, settings.parallel_tasks):
            futures = [run_campaign_task.submit(payload, ctx.campaign_id, spec.task_id) for spec in wave]
            summaries += [future.result() for future in futures]
        record_campaign(ctx, runtime.build, "finished")
    finally:
        close_runtime(runtime)  # release the lake's connection before the flow returns
    report = _report(settings.lake, report_out, ctx.campaign_id) if report_out else None
    emit(ProgressEvent("campaign-end", ctx.campaign_id))
    return {"campaign_id": ctx.campaign_id, "tasks": summaries, "report": report}


def _report(lake, out: str, campaign_id: str) -> dict[str, Any]:
    from flows.report import report as report_flow

    return report_flow(lake=str(lake), out=str(out), campaign_ids=[campaign_id])
