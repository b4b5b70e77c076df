"""The `campaign` flow: draft and refine every task of a build with one shared memory, then report.

One Prefect task per (task, iteration) step; LLM calls and verifications are nested tasks with their
own retry rules (tasks/campaign.py). Resumable: rerun with the same campaign id to continue from
what the lake holds. Runs without a Prefect server (ephemeral API) unless PREFECT_API_URL is set.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

from prefect import flow, get_run_logger
from prefect.task_runners import ThreadPoolTaskRunner

from evokernel.agent.campaign import plan_tasks, record_campaign, replay_refine_stats, run_task
from evokernel.agent.progress import ProgressEvent, emit
from evokernel.agent.runtime import Runtime, open_runtime
from evokernel.agent.state import StepOutcome
from evokernel.config import load_settings
from tasks.campaign import campaign_step, distill, llm_generate, verify_candidate, verify_tags


def make_task_runner(kind: str, workers: int):
    """threads (default) or dask (prefect-dask, for a cluster: pip install 'evokernel[dask]')."""
    if kind == "dask":
        from prefect_dask import DaskTaskRunner

        return DaskTaskRunner(cluster_kwargs={"n_workers": workers, "threads_per_worker": 1,
                                              "processes": True, "dashboard_address": None})
    return ThreadPoolTaskRunner(max_workers=workers)


def _wrap_in_tasks(runtime: Runtime) -> Runtime:
    verify_task = verify_candidate.with_options(tags=verify_tags(runtime.ctx.backend))
    core_verify = runtime.ctx.verify
    ctx = replace(runtime.ctx,
                  generate=lambda request: llm_generate(runtime.llm, request),
                  verify=lambda spec, code: verify_task(core_verify, spec, code))
    return replace(runtime, ctx=ctx)


@flow(name="campaign", task_runner=ThreadPoolTaskRunner(max_workers=2))
def campaign(build: str, lake: str, llm: str, method: str = "evokernel", budget: int = 30,
             tasks: list[str] | None = None, campaign_id: str | None = None, order: str = "level",
             report_out: str | None = None, config_file: str | None = None,
             settings_overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    logger = get_run_logger()
    settings = load_settings(config_file, **{**(settings_overrides or {}), "build": build, "lake": lake,
                                              "llm": llm, "method": method, "budget": budget})
    runtime = _wrap_in_tasks(open_runtime(settings, campaign_id))
    try:
        return _run(runtime, settings, tasks, order, report_out, logger)
    finally:
        runtime.ctx.lake.close()  # release the resident DuckDB connection before the flow returns


def _run(runtime: Runtime, settings, tasks, order, report_out, logger) -> dict[str, Any]:
    ctx = runtime.ctx
    specs = plan_tasks(runtime.build, tasks or (), order)
    logger.info("campaign %s: %d tasks, budget %d, method %s, model %s", ctx.campaign_id, len(specs),
                settings.budget, settings.method, ctx.model)
    emit(ProgressEvent("campaign-start", ctx.campaign_id, total_steps=len(specs) * settings.budget))
    record_campaign(ctx, runtime.build, "running")
    stats = replay_refine_stats(ctx)
    summaries = []
    for spec in specs:
        emit(ProgressEvent("task-start", ctx.campaign_id, spec.task_id))
        summary, stats = run_task(ctx, spec, stats, on_step=_step_logger(ctx.campaign_id, logger),
                                  step=campaign_step)
        if ctx.policy.distills:
            distill(runtime, spec)
        summaries.append(summary)
        logger.info("%s: %s; feasible=%s best=%s ms", spec.task_id, summary.stop_reason, summary.feasible,
                    summary.best_ms)
        emit(ProgressEvent("task-end", ctx.campaign_id, spec.task_id, message=summary.stop_reason))
    record_campaign(ctx, runtime.build, "finished")
    report = _report(settings.lake, report_out, ctx.campaign_id) if report_out else None
    emit(ProgressEvent("campaign-end", ctx.campaign_id))
    return {"campaign_id": ctx.campaign_id, "tasks": [asdict(s) for s in summaries], "report": report}


def _step_logger(campaign_id: str, logger):
    def on_step(outcome: StepOutcome) -> None:
        speed = f" {outcome.candidate_ms:.3f} ms ({outcome.speedup:.2f}x)" if outcome.candidate_ms else ""
        logger.info("%s #%d stage %d: %s%s reward %+.2f", outcome.task_id, outcome.iteration, outcome.stage,
                    "feasible" if outcome.feasible else f"failed {outcome.failed_gate}", speed, outcome.reward)
        emit(ProgressEvent("step", campaign_id, outcome.task_id, outcome=outcome))
    return on_step



def _report(lake: str, out: str, campaign_id: str) -> dict[str, str]:
    from flows.report import report as report_flow

    return report_flow(lake=str(lake), out=str(out), campaign_ids=[campaign_id])
