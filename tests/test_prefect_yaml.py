"""Every deployment in prefect.yaml names a flow that loads, and its parameters validate against
that flow's signature (what `prefect deploy` and a scheduled run would do, without a server)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DEPLOYMENTS = yaml.safe_load((ROOT / "prefect.yaml").read_text())["deployments"]


def test_the_file_declares_the_documented_deployments():
    assert {d["name"] for d in DEPLOYMENTS} == {"build-cpu", "nightly-campaign", "experiment", "report"}
    nightly = next(d for d in DEPLOYMENTS if d["name"] == "nightly-campaign")
    assert nightly["schedules"][0]["cron"] == "0 3 * * *"
    weekly = next(d for d in DEPLOYMENTS if d["name"] == "experiment")  # schedulable, off until switched on
    assert weekly["schedules"][0]["cron"] == "0 4 * * 0" and weekly["schedules"][0]["active"] is False


@pytest.mark.parametrize("deployment", DEPLOYMENTS, ids=lambda d: d["name"])
def test_entrypoint_loads_and_parameters_validate(deployment, monkeypatch):
    from prefect.flows import load_flow_from_entrypoint

    monkeypatch.chdir(ROOT)
    flow = load_flow_from_entrypoint(deployment["entrypoint"])
    validated = flow.validate_parameters(dict(deployment.get("parameters", {})))
    assert set(deployment.get("parameters", {})) <= set(validated)
    with pytest.raises(Exception):
        flow.validate_parameters({**deployment.get("parameters", {}), "no_such_parameter": 1})
