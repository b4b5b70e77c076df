"""A campaign through which the machine fails part of the time: real verifier, real lake, scripted LLM.

During an outage the candidate is verified by a backend whose toolchain this machine lacks (the
verifier's own answer: an infrastructure error naming it), as when a toolchain goes missing for part
of a run. Those attempts are recorded with their reason and leave values, traces, the normaliser and
the task's start points alone; the candidate's own outcomes move values as before. A lake written
before attribution was recorded (no outcome columns) is resumed as it was scored then.
"""

from __future__ import annotations

import pytest

from agent_fixtures import write_script
from evokernel.agent.attribution import MACHINE
from evokernel.agent.campaign import resume_task, stop_reason
from evokernel.agent.runtime import open_runtime
from evokernel.agent.step import candidate_code, commit_step, prepare_step
from evokernel.agent.verification import verify_candidate
from evokernel.config import load_settings
from memory_lake import NewItem

FAST = dict(latency_rounds=5, correctness_trials=5, verify_threads=2, alpha=0.5, epsilon=0.0, q_init=0.0, q1_init=0.0)
MISSING = "cpu-toolchain-missing"  # a backend this machine does not have


def run_with_outage(runtime, task, outage: set[int]) -> None:
    """The campaign loop (evokernel.agent.campaign.run_task) with the iterations in ``outage``
    verified while the toolchain is missing."""
    ctx = runtime.ctx
    state = resume_task(ctx, task)
    while stop_reason(ctx, state) is None:
        plan = prepare_step(ctx, task, state)
        completion = runtime.llm.complete(plan.request)
        code = candidate_code(ctx, completion).code
        backend = MISSING if plan.iteration in outage else ctx.backend
        verdict = verify_candidate(task, code, backend, runtime.verify_settings, 1, delays_s=(0.0,),
                                   sleep=lambda _: None) if code else None
        state = state.after(commit_step(ctx, plan, completion, verdict), ctx.policy)


@pytest.fixture(scope="module")
def outage_run(tmp_path_factory, tiny_build):
    tmp = tmp_path_factory.mktemp("outage")
    task = tiny_build.runnable()[0]
    script = write_script(tmp / "script.json", [task.task_id], draft=["relu_draft_hack", "relu_draft_scalar"],
                          refine=["relu_refine_omp"])
    settings = load_settings(None, build=tiny_build.root, lake=tmp / "lake", llm=f"scripted:{script}",
                             method="evokernel", budget=4, **FAST)
    runtime = open_runtime(settings, "outage")
    # seed the memory with an item every prompt of the task retrieves, so each attempt has context to credit
    runtime.ctx.lake.add_items([NewItem(
        kind="best_practice", backend="cpu", category=task.category, item_id="bp-relu", title="relu: vectorise",
        body="relu activation kernels: vectorise the loop with OpenMP simd and write the output once.")])
    run_with_outage(runtime, task, outage={1, 3})  # the feasible draft's first try, and a refinement
    lake = runtime.ctx.lake
    attempts = lake.query("SELECT * FROM attempts ORDER BY iteration").to_pylist()
    updates = lake.query("SELECT * FROM value_updates ORDER BY seq").to_pylist()
    yield runtime, task, attempts, updates
    runtime.ctx.lake.close()


def test_machine_outcomes_are_recorded_with_their_reason(outage_run):
    _, _, attempts, _ = outage_run
    assert [a["outcome_owner"] for a in attempts] == ["candidate", MACHINE, "candidate", MACHINE]
    for a in attempts:
        if a["outcome_owner"] == MACHINE:
            assert MISSING in a["machine_reason"] and a["machine_reason"].endswith("(after 2 attempts)")
            assert a["reward"] is None and a["reward_applied"] is None and not a["feasible"]
            assert a["feedback"].startswith("NOT JUDGED") and "not a verdict on your code" in a["feedback"]
        else:
            assert a["machine_reason"] is None and a["reward_applied"] is not None
    assert [a["stage"] for a in attempts] == [1, 1, 1, 2]  # the outage did not make the task refine


def test_no_value_update_comes_from_a_machine_outcome(outage_run):
    runtime, _, attempts, updates = outage_run
    machine = {a["attempt_id"] for a in attempts if a["outcome_owner"] == MACHINE}
    assert updates and not {u["attempt_id"] for u in updates} & machine
    lake = runtime.ctx.lake
    retrieved = lake.query("SELECT DISTINCT attempt_id FROM retrievals WHERE item_id = 'bp-relu'").column(0).to_pylist()
    assert machine <= set(retrieved)  # the item was in their context, and still they moved nothing
    q1 = [(u["q_before"], u["q_after"], u["attempt_id"]) for u in updates if u["item_id"] == "bp-relu"]
    assert [a for _, _, a in q1] == [attempts[0]["attempt_id"], attempts[2]["attempt_id"]]
    assert q1[0][1] == -0.5 and q1[1] == (-0.5, 0.25, attempts[2]["attempt_id"])  # -1 then +1 at alpha 0.5
    for u in updates:  # every update applied exactly the attempt's recorded reward
        assert u["reward"] == next(a["reward_applied"] for a in attempts if a["attempt_id"] == u["attempt_id"])


def test_machine_outcomes_leave_no_trace_item_and_no_normaliser_sample(outage_run):
    runtime, task, attempts, _ = outage_run
    traces = runtime.ctx.lake.query("SELECT source_attempt_id FROM items WHERE kind = 'trace'").column(0).to_pylist()
    assert sorted(traces) == sorted(a["attempt_id"] for a in attempts if a["outcome_owner"] != MACHINE and a["code"])
    state = resume_task(runtime.ctx, task)
    assert state.refine_stats.count == 0 and len(state.start_points) == 1


def test_a_lake_written_before_attribution_resumes_as_scored_then(tmp_path, tiny_build):
    task = tiny_build.runnable()[1]
    script = write_script(tmp_path / "s.json", [task.task_id], draft=["relu_draft_hack"], refine=["relu_refine_omp"])
    settings = load_settings(None, build=tiny_build.root, lake=tmp_path / "lake", llm=f"scripted:{script}",
                             method="evokernel", budget=1, **FAST)
    runtime = open_runtime(settings, "old")
    run_with_outage(runtime, task, outage=set())
    lake = runtime.ctx.lake
    with lake._guard:  # as a lake written before these columns existed
        for column in ("outcome_owner", "machine_reason", "reward_applied", "reward_rule"):
            lake._con.execute(f"ALTER TABLE attempts DROP COLUMN {column}")
    lake.close()
    runtime = open_runtime(settings.model_copy(update={"budget": 2}), "old")  # reopening adds them back, null
    try:
        state = resume_task(runtime.ctx, task)
        assert state.iterations_done == 1 and state.machine_streak == 0
        row = runtime.ctx.lake.query("SELECT outcome_owner, reward, reward_normalized FROM attempts").to_pylist()
        assert row == [{"outcome_owner": None, "reward": -1.0, "reward_normalized": -1.0}]
    finally:
        runtime.ctx.lake.close()
