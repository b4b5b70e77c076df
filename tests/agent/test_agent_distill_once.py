"""A task is distilled once per campaign (issue 39, item 2): a rerun of a finished campaign calls no LLM.

The issue's case: the model's distillation answer held no lesson in the expected form, nothing was
stored, and every rerun of the campaign id (a nightly deployment under a stable id) asked again. Now
such a distillation is recorded as one (``llm_calls.items_stored = 0``, the answer kept in
``llm_calls.response``) and asked again only with ``retry_empty_distillations``. The LLM is a fake
OpenAI-compatible server on loopback (tests/llm/fake_server.py) that answers "ok" to everything and
logs every request; the campaign, lake and CLI are real.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from evokernel.agent.campaign import run_task
from evokernel.agent.runtime import close_runtime, open_runtime
from evokernel.config import load_settings
from memory_lake import Lake

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "llm"))  # the fake OpenAI/Anthropic server of the LLM tests

from fake_server import API_KEY, FakeLLMServer  # noqa: E402


def distill_calls(lake: Path) -> list[dict]:
    with Lake.open(lake) as opened:
        return opened.query("SELECT purpose, items_stored, response FROM llm_calls ORDER BY created_at").to_pylist()


def campaign(build: Path, lake: Path, server: FakeLLMServer, tmp: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT), "HOME": str(tmp), "PREFECT_HOME": str(tmp / "prefect"),
           "XDG_CACHE_HOME": os.environ.get("XDG_CACHE_HOME", str(tmp / "cache")), "OPENAI_COMPATIBLE_API_KEY": API_KEY}
    return subprocess.run([sys.executable, "-m", "cli.main", "campaign", "--build", str(build), "--lake", str(lake),
                           "--llm", f"openai-compatible:m@{server.url}/v1", "--budget", "1", "--campaign-id", "nightly",
                           *extra], capture_output=True, text=True, cwd=tmp, env=env, timeout=600)


def test_a_rerun_of_a_finished_campaign_makes_no_llm_call(tiny_build, tmp_path, prefect_home):
    task = tiny_build.runnable()[0].task_id
    lake = tmp_path / "lake"
    with FakeLLMServer() as server:
        first = campaign(tiny_build.root, lake, server, tmp_path, "--tasks", task)
        assert first.returncode == 0, first.stderr
        assert len(server.requests) == 2  # the draft (no kernel in "ok") and the distillation
        assert distill_calls(lake) == [{"purpose": "distill", "items_stored": 0, "response": "ok"}]
        rerun = campaign(tiny_build.root, lake, server, tmp_path, "--tasks", task)
        assert rerun.returncode == 0, rerun.stderr
        assert len(server.requests) == 2  # the rerun asked nothing
    assert len(distill_calls(lake)) == 1
    assert "iteration budget spent (1)" in rerun.stdout


def test_an_empty_distillation_is_asked_again_only_when_the_settings_say_so(tiny_build, tmp_path, monkeypatch):
    task = tiny_build.runnable()[0]
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", API_KEY)
    with FakeLLMServer() as server:
        def run(**settings) -> None:
            runtime = open_runtime(load_settings(None, build=tiny_build.root, lake=tmp_path / "lake", budget=1,
                                                 llm=f"openai-compatible:m@{server.url}/v1", **settings), "c")
            try:
                run_task(runtime, task)
            finally:
                close_runtime(runtime)

        run()
        run()
        assert len(server.requests) == 2  # one draft, one distillation: the second run asked nothing
        run(retry_empty_distillations=True)
        assert len(server.requests) == 3  # asked: the distillation again, nothing else
        assert server.requests[-1][2]["messages"][0]["content"] == server.requests[1][2]["messages"][0]["content"]
    assert [c["items_stored"] for c in distill_calls(tmp_path / "lake")] == [0, 0]
