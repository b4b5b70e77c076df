"""The within-task gain measured when a task ends (evokernel.agent.gain): the first feasible draft and
the best kernel timed with the reference in one paired verification (verifier.api.compare), recorded
once in the lake's comparisons table. Real verifier, real lake."""

from __future__ import annotations

import pytest

from agent_fixtures import KERNELS
from evokernel.agent.gain import finish_task
from evokernel.agent.runtime import open_runtime
from evokernel.agent.state import StartPoint, TaskState
from evokernel.config import load_settings

FAST = dict(latency_rounds=5, correctness_trials=5, verify_threads=2)


def _state(task_id: str, draft: str, best: str) -> TaskState:
    points = (StartPoint(f"trace/g/{task_id}/000", (KERNELS / f"{draft}.py").read_text(), 1.0, 1.0, 0),
              StartPoint(f"trace/g/{task_id}/001", (KERNELS / f"{best}.py").read_text(), 0.5, 2.0, 1))
    return TaskState(task_id, iterations_done=2, start_points=points, best_item_id=points[1].item_id,
                     first_feasible_iteration=0)


@pytest.fixture
def runtime(tmp_path, tiny_build):
    settings = load_settings(None, build=tiny_build.root, lake=tmp_path / "lake", llm="scripted:demo", **FAST)
    runtime = open_runtime(settings, "g")
    yield runtime
    runtime.ctx.lake.close()


def test_the_draft_and_the_best_kernel_are_timed_in_the_same_rounds(runtime, tiny_build):
    task = tiny_build.runnable()[0]
    row = finish_task(runtime.ctx, task, _state(task.task_id, "relu_draft_scalar", "relu_refine_omp"),
                      runtime.verify_settings, 1)
    assert row["outcome_owner"] == "candidate" and not row["same_kernel"] and not row.get("failed_reason")
    assert row["ratio_ci_low"] <= row["ratio"] <= row["ratio_ci_high"] and row["rounds"] >= 5
    assert row["draft_speedup"] > 0 and row["best_speedup"] > 0 and row["reference_ms"] > 0
    stored = runtime.ctx.lake.query("SELECT ratio, draft_attempt_id, best_attempt_id FROM comparisons").to_pylist()
    assert stored == [{"ratio": row["ratio"], "draft_attempt_id": f"g/{task.task_id}/000",
                       "best_attempt_id": f"g/{task.task_id}/001"}]
    assert finish_task(runtime.ctx, task, _state(task.task_id, "relu_draft_scalar", "relu_refine_omp"),
                       runtime.verify_settings, 1) is None  # once per campaign and task

