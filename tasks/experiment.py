"""Prefect tasks of an experiment: preparing a run's lake (a copy of the starting lake, made once)
and writing the side-by-side report. The runs themselves are campaign flows (flows/campaign.py).
Defaults from tasks/defaults.py: no retries (a rerun of the experiment resumes it), no caching."""

from __future__ import annotations

from pathlib import Path

from prefect import task

from evokernel.agent.experiment import ExperimentPlan, ExperimentRun, prepare_run_lake
from reports.experiment import RunRef, write_experiment_report
from tasks.defaults import EXPERIMENT_TASK


@task(name="prepare-run-lake", task_run_name="lake {run.method}-s{run.seed}", **EXPERIMENT_TASK)
def prepare_run_lake_task(plan: ExperimentPlan, run: ExperimentRun) -> str:
    return prepare_run_lake(plan, run)


@task(name="experiment-report", **EXPERIMENT_TASK)
def experiment_report_task(plan: ExperimentPlan, tasks: list[str]) -> str:
    runs = [RunRef(r.method, r.seed, r.campaign_id, r.lake) for r in plan.runs()]
    title = f"Experiment {plan.experiment_id}: {plan.llm}, {plan.llm_calls_per_task} LLM calls per task"
    return str(write_experiment_report(runs, tasks, Path(plan.report_dir), title))
