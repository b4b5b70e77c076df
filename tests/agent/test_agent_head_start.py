"""The first steps' LLM requests go out before the campaign's Prefect API is up, and the flow's step
takes the answer instead of asking again (issue 39, item 5: evokernel/agent/head_start.py).

Real lake, real build, real HTTP client against a fake OpenAI-compatible server on loopback that logs
every request (tests/llm/fake_server.py). Seconds to the first request: benchmarks/first_feedback.py.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from evokernel.agent.campaign import resume_task
from evokernel.agent.head_start import UNUSED, HeadStart, take
from evokernel.agent.runtime import release_runtime, runtime_for
from evokernel.agent.step import prepare_step
from evokernel.config import load_settings
from memory_lake import Lake

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "llm"))

from fake_server import API_KEY, FakeLLMServer  # noqa: E402


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", API_KEY)
    with FakeLLMServer() as running:
        yield running


def _settings(build, tmp_path, server):
    return load_settings(None, build=build.root, lake=tmp_path / "lake", budget=2,
                         llm=f"openai-compatible:m@{server.url}/v1")


def _answered(head: HeadStart, server, count: int) -> None:
    head.wait()
    deadline = time.monotonic() + 60
    while len(server.requests) < count and time.monotonic() < deadline:
        time.sleep(0.05)


def test_the_flows_step_takes_the_answer_sent_ahead_and_asks_nothing(tiny_build, tmp_path, server):
    spec = tiny_build.runnable()[0]
    settings = _settings(tiny_build, tmp_path, server)
    head = HeadStart.begin(settings, "ahead", [spec.task_id], "level")
    _answered(head, server, 1)
    assert len(server.requests) == 1 and head.sent
    runtime = runtime_for(settings, "ahead")  # what the flow's task does: the runtime the head start opened
    try:
        assert runtime is head.runtime
        plan = prepare_step(runtime.ctx, spec, resume_task(runtime.ctx, spec))  # the same step, rebuilt
        ahead = take(plan.attempt_id, plan.request)
        assert ahead is not None and ahead.result().text == "ok"
        assert take(plan.attempt_id, plan.request) is None  # taken once
    finally:
        release_runtime(runtime)
        head.close()
    assert len(server.requests) == 1
    with Lake.open(tmp_path / "lake") as lake:
        assert lake.query("SELECT count(*) AS n FROM llm_calls").column("n")[0].as_py() == 0


def test_an_answer_no_step_took_is_recorded_so_its_cost_counts(tiny_build, tmp_path, server):
    spec = tiny_build.runnable()[0]
    head = HeadStart.begin(_settings(tiny_build, tmp_path, server), "stopped", [spec.task_id], "level")
    _answered(head, server, 1)
    deadline = time.monotonic() + 30
    while not all(s.answer.done() for s in _pending(head)) and time.monotonic() < deadline:
        time.sleep(0.05)
    head.close()  # the campaign stopped before its first step: nothing took the answer
    with Lake.open(tmp_path / "lake") as lake:
        rows = lake.query("SELECT purpose, task_id, response, input_tokens FROM llm_calls").to_pylist()
    assert rows == [{"purpose": UNUSED, "task_id": spec.task_id, "response": "ok", "input_tokens": 11}]


def test_a_finished_task_sends_nothing_ahead(tiny_build, tmp_path, server):
    spec = tiny_build.runnable()[0]
    settings = load_settings(None, build=tiny_build.root, lake=tmp_path / "lake", budget=1,
                             llm=f"openai-compatible:m@{server.url}/v1")
    first = HeadStart.begin(settings, "done", [spec.task_id], "level")
    _answered(first, server, 1)
    runtime = runtime_for(settings, "done")
    try:  # the step runs (no kernel in "ok": nothing to verify) and commits: the budget of 1 is spent
        from evokernel.agent.step import commit_step

        plan = prepare_step(runtime.ctx, spec, resume_task(runtime.ctx, spec))
        commit_step(runtime.ctx, plan, take(plan.attempt_id, plan.request).result(), None)
    finally:
        release_runtime(runtime)
        first.close()
    again = HeadStart.begin(settings, "done", [spec.task_id], "level")
    again.wait()
    again.close()
    assert len(server.requests) == 1 and not again.sent


def _pending(head: HeadStart):
    from evokernel.agent import head_start

    return [head_start._SENT[a] for a in head.sent if a in head_start._SENT]
