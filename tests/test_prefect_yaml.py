"""Every deployment in prefect.yaml names a flow that loads, and its parameters validate against
that flow's signature (what `prefect deploy` and a scheduled run would do, without a server); the
recipe's EVOKERNEL_HOME works on a worker; the nightly campaign resumes under a stable id."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load((ROOT / "prefect.yaml").read_text())
DEPLOYMENTS = CONFIG["deployments"]


def test_the_file_declares_the_documented_deployments():
    assert {d["name"] for d in DEPLOYMENTS} == {"build-cpu", "nightly-campaign", "experiment", "report"}
    nightly = next(d for d in DEPLOYMENTS if d["name"] == "nightly-campaign")
    assert nightly["schedules"][0]["cron"] == "0 3 * * *"
    weekly = next(d for d in DEPLOYMENTS if d["name"] == "experiment")  # schedulable, off until switched on
    assert weekly["schedules"][0]["cron"] == "0 4 * * 0" and weekly["schedules"][0]["active"] is False


def test_the_nightly_campaign_has_a_stable_id_so_a_cut_short_night_resumes():
    nightly = next(d for d in DEPLOYMENTS if d["name"] == "nightly-campaign")
    campaign_id = nightly["parameters"].get("campaign_id")
    assert isinstance(campaign_id, str) and campaign_id.strip() and "{{" not in campaign_id


@pytest.mark.parametrize("deployment", DEPLOYMENTS, ids=lambda d: d["name"])
def test_entrypoint_loads_and_parameters_validate(deployment, monkeypatch):
    from prefect.flows import load_flow_from_entrypoint

    monkeypatch.chdir(ROOT)
    flow = load_flow_from_entrypoint(deployment["entrypoint"])
    validated = flow.validate_parameters(dict(deployment.get("parameters", {})))
    assert set(deployment.get("parameters", {})) <= set(validated)
    with pytest.raises(Exception):
        flow.validate_parameters({**deployment.get("parameters", {}), "no_such_parameter": 1})


def test_a_worker_with_evokernel_home_exported_runs_the_pull_step_and_loads_settings(monkeypatch, tmp_path):
    """The README's recipe: the worker has EVOKERNEL_HOME exported; the pull step (run by the worker
    at run time, as Prefect does) moves into it, and the flow's settings accept the variable."""
    from prefect.deployments.steps import set_working_directory
    from prefect.utilities.templating import apply_values

    from evokernel.config import load_settings

    monkeypatch.setenv("EVOKERNEL_HOME", str(tmp_path))
    before = os.getcwd()
    try:
        for step in CONFIG["pull"]:  # the worker's run_step: the environment applied to the template, then the step
            ((name, inputs),) = step.items()
            assert name == "prefect.deployments.steps.set_working_directory"
            set_working_directory(**apply_values(inputs, os.environ))
        assert Path(os.getcwd()) == tmp_path
    finally:
        os.chdir(before)
    assert load_settings(None).lake == Path("runs/lake")


def test_the_docs_name_every_deployment_of_the_file():
    """issue 39: the docs listed three deployments while prefect.yaml declares four."""
    import re

    checked = 0
    for page in sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]:
        for line in page.read_text().splitlines():
            if "reads prefect.yaml:" not in line:
                continue
            listed = re.sub(r"\([^)]*\)", "", line.split("reads prefect.yaml:", 1)[1])
            assert {name.strip() for name in listed.split(",")} == {d["name"] for d in DEPLOYMENTS}, (page, line)
            checked += 1
    assert checked, "no page lists the deployments (docs/scheduled.md's `prefect deploy` line did)"
