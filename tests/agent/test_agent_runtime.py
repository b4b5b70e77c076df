"""A campaign's backend is its build's: no setting needed, a conflicting one is a one-line error."""

from __future__ import annotations

import pytest

from evokernel.agent.runtime import CampaignError, campaign_backend, open_runtime
from evokernel.config import load_settings
from agent_fixtures import build_tiny
from test_agent_cli import _cli


@pytest.fixture(scope="module")
def triton_build(tmp_path_factory):
    return build_tiny("triton", tmp_path_factory.mktemp("triton-build"))


def test_a_non_cpu_build_runs_on_its_own_backend_without_a_setting(triton_build, tmp_path, monkeypatch):
    monkeypatch.delenv("EVOKERNEL_BACKEND", raising=False)
    settings = load_settings(None, build=triton_build.root, lake=tmp_path / "lake", llm="scripted:demo")
    assert settings.backend is None
    runtime = open_runtime(settings, "triton-run")
    assert runtime.ctx.backend == "triton"
    assert "triton" in runtime.ctx.scaffold.lower()
    assert runtime.ctx.lake.backend == "triton"


def test_a_matching_setting_is_accepted_and_a_conflicting_one_names_both(triton_build, tmp_path):
    same = load_settings(None, build=triton_build.root, lake=tmp_path / "lake", llm="scripted:demo",
                         backend="triton")
    assert campaign_backend(same, triton_build) == "triton"
    other = load_settings(None, build=triton_build.root, lake=tmp_path / "lake", llm="scripted:demo",
                          backend="cpu")
    with pytest.raises(CampaignError) as error:
        open_runtime(other, "conflict")
    message = str(error.value)
    assert "\n" not in message and "'triton'" in message and "'cpu'" in message
    assert str(triton_build.root / "build.json") in message
    assert not (tmp_path / "lake").exists()


def test_cli_stops_a_conflicting_backend_before_anything_runs(triton_build, tmp_path):
    result = _cli("campaign", "--build", str(triton_build.root), "--lake", str(tmp_path / "lake"),
                  "--llm", "scripted:demo", cwd=tmp_path, env={"EVOKERNEL_BACKEND": "cpu"})
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "build.json" in errors[0] and "'cpu'" in errors[0]
    assert "prefect" not in result.stderr.lower()  # stopped before a flow started
    assert not (tmp_path / "lake").exists()
