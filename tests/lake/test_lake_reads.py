"""The typed reads the agent calls (memory_lake/reads.py), on a real lake of every kind."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from lake_fixtures import sample_items

from memory_lake import AttemptRow, CampaignState, ChildTrace, NewItem, RetrievalRequest, TaskAttempt, ValueUpdate

T0 = datetime(2026, 11, 1, tzinfo=timezone.utc)


def test_typed_reads_return_what_the_rows_say(lake):
    lake.append("campaigns", [{"campaign_id": "c1", "status": "running", "recorded_at": T0},
                              {"campaign_id": "c1", "status": "finished", "model": "m", "recorded_at": T0 + timedelta(1)}])
    lake.append("attempts", [{"attempt_id": f"a{i}", "campaign_id": "c1", "task_id": "t1", "iteration": i,
                              "stage": 1 + (i > 0), "reward": [1.0, 0.5, None][i], "input_tokens": 3, "output_tokens": 4,
                              "llm_seconds": 1.0, "verify_seconds": 0.5, "created_at": T0 + timedelta(minutes=i)}
                             for i in range(3)])
    (parent,) = lake.add_items([NewItem("trace", "cpu", "parent", "p", task_id="t1", source_attempt_id="a0")])
    (child,) = lake.add_items([NewItem("trace", "cpu", "child", "c", task_id="t1", parent_item_id=parent,
                                       campaign_id="c1", speedup=2.0)])
    (distilled,) = lake.add_items([NewItem("experience", "cpu", "note", "n", task_id="t1", campaign_id="c1")])
    shown = lake.retrieve(RetrievalRequest("a1", "t1", "parent child note", None, "cpu", 2, n=2, epsilon=0.0))
    lake.update_values([ValueUpdate(parent, 2, 1.0, 0.5, "a1")])

    assert lake.campaign_state("c1") == CampaignState("c1", None, None, "m", None, None, "finished", None, None)
    assert lake.campaign_state("nope") is None
    row = lake.attempt_row("a1")
    assert isinstance(row, AttemptRow) and row.reward == 0.5 and row.as_dict()["iteration"] == 1
    assert lake.attempt_row("nope") is None
    assert lake.children_of(parent, 5) == (ChildTrace(child, "trace", "child", "c", "", "t1", None, None, 2.0),)
    assert lake.distilled_for_task("c1", "t1") == (distilled,)
    assert lake.item_exists(parent) and not lake.item_exists("nope")
    assert lake.refine_rewards("c1") == (0.5,)
    assert lake.retrieved_for_attempt("a1") == shown
    attempts = lake.task_attempts("c1", "t1")
    assert [a.attempt_id for a in attempts] == ["a0", "a1", "a2"] and isinstance(attempts[0], TaskAttempt)
    assert attempts[0].trace_item_id == parent and attempts[1].tokens == 7 and attempts[1].seconds == 1.5
    assert lake.updates_for_attempt("a1") == frozenset({(parent, 2)})
    assert lake.updates_for_attempt("a0") == frozenset()
    assert sample_items  # the shared helper stays importable
