"""The `campaign` flow: draft and refine every task of a build with one shared memory, then report.

Tasks run in waves: consecutive tasks of the same level, up to ``parallel_tasks`` at a time, are
submitted to the flow's task runner (threads by default, Dask for a cluster); levels stay in order,
so level 1's memory is there before level 2 starts. Each benchmark task is one Prefect task
(tasks/campaign.py) whose LLM calls and verifications are nested tasks; every task in this process
shares the flow's runtime (evokernel.agent.runtime.runtime_for), a Dask worker opens its own once and
writes the same lake. The flow emits in-process progress events for what it sees (start, each task's
end as its future finishes); steps are counted in the lake. At the end it publishes the campaign's
summary, per-task table and report link as Prefect artifacts (flows/artifacts.py).
Resumable: rerun with the same campaign id to continue from what the lake holds. Tasks in other
processes need the flow's Prefect API to be one they reach (flows/prefect_api.py; the CLI sees to it).
One writer per campaign id: the flow holds the id's lease in the lake while it runs and ends Failed
(``stopped.status == "refused"``) when another live process holds it. A campaign asked to stop
(evokernel.agent.interrupt: Ctrl-C, a fatal error in a task) runs no further wave, records its
status (interrupted / failed) once, and ends Cancelled or Failed with its result.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any, Sequence

from prefect import flow, get_run_logger
from prefect.futures import as_completed
from prefect.runtime import flow_run
from prefect.settings import PREFECT_API_URL
from prefect.states import Cancelled, Failed, State
from prefect.task_runners import ThreadPoolTaskRunner

from evokernel.agent import interrupt
from evokernel.agent.campaign import plan_tasks, record_campaign, task_waves
from evokernel.agent.progress import ProgressEvent, emit
from evokernel.agent.runtime import Runtime, release_runtime, runtime_for
from evokernel.config import Settings, load_settings
from flows.artifacts import CampaignRun, publish_campaign
from kernelbench_npu.spec import TaskSpec
from memory_lake.campaign_lock import CampaignRunning
from tasks.campaign import run_campaign_task

_RUNNING: dict[str, str] = {}  # the flow run id of the campaign running in this process (abandon_flow_run)


def make_task_runner(kind: str, workers: int, address: str | None = None):
    """threads (default) or dask (prefect-dask): the scheduler at ``address``, or a local cluster of
    ``workers`` worker processes."""
    if kind == "dask":
        from prefect_dask import DaskTaskRunner

        if address:
            return DaskTaskRunner(address=address)
        return DaskTaskRunner(cluster_kwargs={"n_workers": workers, "threads_per_worker": 1,
                                              "processes": True, "dashboard_address": None})
    return ThreadPoolTaskRunner(max_workers=workers)


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
             settings_overrides: dict[str, Any] | None = None) -> dict[str, Any] | State:
    """Returns the campaign's result; a Cancelled (interrupted) or Failed state holding it when the
    campaign stopped early or its id is held by another process (``result["stopped"]`` says why)."""
    started = time.monotonic()
    settings = campaign_settings(config_file, build, lake, llm, method, budget, settings_overrides)
    interrupt.begin()
    runtime = runtime_for(settings, campaign_id)  # creates the lake if new; refuses a mismatched resume
    ctx = runtime.ctx
    try:
        with ctx.lake.hold_campaign(ctx.campaign_id):  # one writer per campaign id
            summaries, stop = _run(settings, runtime, tasks, order)
    except CampaignRunning as exc:
        return Failed(message=str(exc), data={"campaign_id": ctx.campaign_id, "tasks": [], "report": None,
                                              "stopped": {"status": "refused", "reason": str(exc)}})
    finally:
        release_runtime(runtime)  # the last holder closes the lake's connection before the flow returns
    emit(ProgressEvent("campaign-end", ctx.campaign_id))
    if stop is not None:
        result = {"campaign_id": ctx.campaign_id, "tasks": summaries, "report": None, "stopped": asdict(stop)}
        message = f"campaign {ctx.campaign_id} {stop.status}: {stop.reason}"
        return (Cancelled if stop.status == interrupt.INTERRUPTED else Failed)(message=message, data=result)
    report = _report(settings.lake, report_out, ctx.campaign_id) if report_out else None
    publish_campaign(CampaignRun(ctx.campaign_id, ctx.backend, ctx.policy.name, ctx.model, runtime.build.build_hash,
                                 settings.budget, time.monotonic() - started, tuple(summaries),
                                 report["html"] if report else None))
    return {"campaign_id": ctx.campaign_id, "tasks": summaries, "report": report, "stopped": None}


def _run(settings: Settings, runtime: Runtime, tasks: list[str] | None,
         order: str) -> tuple[list[dict[str, Any]], interrupt.Stop | None]:
    """Run the waves; the campaign's status is recorded whichever way it ends (see
    evokernel.agent.interrupt: an exception here is a failure, an interrupt an interruption)."""
    ctx, build = runtime.ctx, runtime.build
    specs = plan_tasks(build, tasks or (), order)
    get_run_logger().info("campaign %s: %d tasks, budget %d, method %s, model %s, %d task(s) at a time",
                          ctx.campaign_id, len(specs), settings.budget, settings.method, ctx.model,
                          settings.parallel_tasks)
    emit(ProgressEvent("campaign-start", ctx.campaign_id, total_steps=len(specs) * settings.budget,
                       budget=settings.budget))
    record_campaign(ctx, build, "running")
    interrupt.on_finish(lambda stop: record_campaign(ctx, build, stop.status, stop.reason))
    _RUNNING.update(flow_run_id=flow_run.id, api_url=PREFECT_API_URL.value() or "")
    summaries: list[dict[str, Any]] = []
    try:
        for wave in task_waves(specs, settings.parallel_tasks):
            if interrupt.stopping():
                break
            summaries += _run_wave(settings.model_dump(mode="json"), ctx.campaign_id, wave)
    except Exception as exc:  # a bug or an unexpected failure: its traceback goes on, the status is recorded
        interrupt.request_stop(interrupt.FAILED, f"{type(exc).__name__}: {_first_line(exc)}")
        interrupt.finish()
        raise
    except BaseException as exc:  # KeyboardInterrupt, Prefect's TerminationSignal (SIGTERM)
        interrupt.request_stop(interrupt.INTERRUPTED, type(exc).__name__)
        interrupt.finish()
        raise
    finally:
        _RUNNING.clear()
    stop = interrupt.finish()
    if stop is None:
        record_campaign(ctx, build, "finished")
        interrupt.settled()  # a Ctrl-C during the report does not make it interrupted
    return summaries, stop


def abandon_flow_run(stop: interrupt.Stop, timeout_s: float = 2.0) -> None:
    """Mark the running campaign's flow run Cancelled (interrupted) or Failed in its Prefect API, for a
    process about to exit while the flow is still blocked (the CLI's watchdog); best effort."""
    flow_run_id, api_url = _RUNNING.get("flow_run_id"), _RUNNING.get("api_url")
    if not flow_run_id or not api_url:  # (without a URL the client would start a server of its own)
        return
    from prefect import get_client
    from prefect.settings import temporary_settings

    state = (Cancelled if stop.status == interrupt.INTERRUPTED else Failed)(message=f"{stop.status}: {stop.reason}")
    try:  # this thread does not see the flow's settings context: name its API
        with temporary_settings(updates={PREFECT_API_URL: api_url}), \
                get_client(sync_client=True, httpx_settings={"timeout": timeout_s}) as client:
            client.set_flow_run_state(flow_run_id, state, force=True)
    except Exception:  # the API may be gone already: the lake holds the campaign's status
        pass


def _run_wave(payload: dict[str, Any], campaign_id: str, wave: Sequence[TaskSpec]) -> list[dict[str, Any]]:
    """Submit a wave's tasks; say each one's end as it finishes; their summaries in wave order."""
    futures = [run_campaign_task.submit(payload, campaign_id, spec.task_id) for spec in wave]
    for future in as_completed(futures):
        summary = future.result()
        if not interrupt.stopping():
            emit(ProgressEvent("task-end", campaign_id, summary["task_id"], message=summary["stop_reason"]))
    return [future.result() for future in futures]


def _report(lake, out: str, campaign_id: str) -> dict[str, Any]:
    from flows.report import report as report_flow

    return report_flow(lake=str(lake), out=str(out), campaign_ids=[campaign_id])


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""
