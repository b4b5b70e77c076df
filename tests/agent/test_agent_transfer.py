"""Issue 35 end to end in the core (scripted LLM, real verifier, real lake): what the memory shows the
model. A failed trace reaches a prompt as its lesson (gate, error, the fix a later attempt made), not
its code; another category's untried lesson reaches refining prompts; the campaign's best kernel is
the lake's (best_kernels.sql) and the report's; a task whose best kernel is its draft records a
within-task ratio of exactly 1."""

from __future__ import annotations

import pytest

from agent_fixtures import write_script
from evokernel.agent.campaign import resume_task, run_task
from evokernel.agent.runtime import open_runtime
from evokernel.agent.step import prepare_step
from evokernel.config import load_settings
from memory_lake import NewItem

FAST = dict(latency_rounds=5, correctness_trials=5, verify_threads=2, alpha=0.5, epsilon=0.0)
LESSON = NewItem(kind="best_practice", backend="cpu", category="pooling", item_id="bp-other-category",
                 task_id="KB-L1/42_Max_Pooling_2D", title="vectorise elementwise loops",
                 body="relu activation loops: vectorise with omp simd over the elements, one pass")


@pytest.fixture(scope="module")
def campaign(tmp_path_factory, tiny_build):
    tmp = tmp_path_factory.mktemp("transfer")
    first, second = tiny_build.runnable()[:2]
    script = write_script(tmp / "script.json", [first.task_id, second.task_id],
                          draft=["relu_draft_hack", "relu_draft_scalar"], refine=["relu_refine_leaky_bug"])
    settings = load_settings(None, build=tiny_build.root, lake=tmp / "lake", llm=f"scripted:{script}",
                             budget=3, **FAST)
    runtime = open_runtime(settings, "c35")
    runtime.ctx.lake.add_items([LESSON])
    summary = run_task(runtime, first)
    yield runtime, first, second, summary
    runtime.ctx.lake.close()


def test_a_failed_trace_is_shown_by_its_lesson_not_its_code(campaign):
    runtime, first, second, _ = campaign
    state = resume_task(runtime.ctx, second)
    plan = prepare_step(runtime.ctx, second, state, record=False)
    failed = [item for item in plan.context if item.kind == "trace" and item.feasible is False]
    assert failed, [i.item_id for i in plan.context]
    lesson = failed[0]
    assert lesson.code == "" and lesson.body.startswith("failed at the hack gate: ")
    assert "fixed in iteration 1 (passed the hack gate)" in lesson.body or "after a rewrite" in lesson.body
    prompt = plan.request.prompt
    memory = prompt.split("## Retrieved memory")[1]
    assert "[failed attempt: its lesson]" in memory and "the line it points at: `y = torch.relu(x)" in memory
    assert "lib.touch(y, y.numel())" not in memory  # the rest of the failed kernel is not shown


def test_another_categorys_untried_lesson_reaches_a_refine_prompt(campaign):
    runtime, first, _, _ = campaign
    shown = runtime.ctx.lake.query(
        "SELECT r.q_value FROM retrievals r JOIN attempts a USING (attempt_id) "
        "WHERE a.stage = 2 AND r.item_id = 'bp-other-category'").to_pylist()
    assert shown == [{"q_value": 0.0}]  # in the first refinement, while its Q2 was the prior
    q2 = runtime.ctx.lake.current_q(["bp-other-category"], 2)["bp-other-category"]
    assert q2 < 0  # that refinement failed: Q2 now decides


def test_the_log_the_lake_and_the_report_name_one_best_kernel(campaign):
    runtime, first, _, summary = campaign
    best = runtime.ctx.lake.best_kernels(["c35"])
    assert [b.task_id for b in best] == [first.task_id]
    state = resume_task(runtime.ctx, first)
    assert state.best_item_id == f"trace/{best[0].best_attempt_id}"
    assert summary.best_speedup == best[0].best_speedup
    progress = {p.task_id: p for p in runtime.ctx.lake.campaign_progress("c35")}
    assert progress[first.task_id].best_speedup == best[0].best_speedup


def test_a_task_whose_best_kernel_is_its_draft_records_a_ratio_of_exactly_one(campaign):
    runtime, first, _, _ = campaign
    rows = runtime.ctx.lake.query("SELECT * FROM comparisons").to_pylist()
    # the one refinement failed a gate: the best kernel is the draft, nothing to time
    assert len(rows) == 1 and rows[0]["same_kernel"] and rows[0]["ratio"] == 1.0
    assert rows[0]["draft_attempt_id"] == rows[0]["best_attempt_id"] == f"c35/{first.task_id}/001"
    run_task(runtime, first)  # a rerun of the finished task compares nothing again
    assert runtime.ctx.lake.query("SELECT count(*) AS n FROM comparisons").to_pylist()[0]["n"] == 1
