"""The `experiment` flow: the paper's protocol as one resumable run (prefect.yaml deployment
`experiment`; `evokernel experiment` calls it).

For each method and seed (evokernel.agent.experiment.plan_experiment): prepare the run's lake (a
copy of the starting lake, made once), run the `campaign` flow on it as a subflow with the run's
campaign id and its share of the LLM-call budget, then write the side-by-side report
(reports/experiment.py). Runs go one after another (each campaign may run its tasks in parallel,
``parallel_tasks``). Rerunning with the same ``out`` resumes: copies are not made again, campaigns
continue from what their lakes hold, the report is rewritten.
"""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger

from evokernel.agent.campaign import plan_tasks
from evokernel.agent.experiment import DEFAULT_METHODS, plan_experiment
from flows.campaign import campaign
from kernelbench_npu.spec import load_build
from tasks.experiment import experiment_report_task, prepare_run_lake_task


@flow(name="experiment")
def experiment(build: str, llm: str, out: str, methods: list[str] = list(DEFAULT_METHODS), seeds: list[int] = [0, 1],
               llm_calls_per_task: int = 30, tasks: list[str] | None = None, start_lake: str | None = None,
               experiment_id: str | None = None, order: str = "level", config_file: str | None = None,
               settings_overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    logger = get_run_logger()
    plan = plan_experiment(out, build, llm, methods, seeds, llm_calls_per_task, tasks or (), start_lake, experiment_id)
    task_ids = [t.task_id for t in plan_tasks(load_build(build), plan.tasks, order)]
    results = []
    for run in plan.runs():
        lake = prepare_run_lake_task(plan, run)
        logger.info("run %s (campaign %s, %d generations per task): %s", run.name, run.campaign_id, run.budget, lake)
        summary = campaign(build=build, lake=run.lake, llm=llm, method=run.method, budget=run.budget,
                           tasks=task_ids, campaign_id=run.campaign_id, order=order, report_out=None,
                           config_file=config_file, settings_overrides=settings_overrides)
        results.append({"run": run.name, "campaign_id": run.campaign_id, "lake": run.lake, "tasks": summary["tasks"]})
    report = experiment_report_task(plan, task_ids)
    logger.info("experiment %s: report %s", plan.experiment_id, report)
    return {"experiment_id": plan.experiment_id, "runs": results, "report": report}
