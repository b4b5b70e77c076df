"""The CLI's progress bar counts steps in the lake (committed attempts, whichever process wrote them)
and a task's whole budget once the flow says it ended."""

from __future__ import annotations

from datetime import datetime, timezone

from cli.progress_bar import CampaignProgress
from evokernel.agent.progress import ProgressEvent, steps_done
from memory_lake import Lake


def test_steps_done_caps_running_tasks_at_the_budget_and_completes_ended_ones():
    assert steps_done({}, set(), 4) == 0
    assert steps_done({"a": 3, "b": 9}, set(), 4) == 3 + 4
    assert steps_done({"a": 1}, {"a", "c"}, 4) == 8  # "c" ended without an attempt (resumed, already done)


def _attempts(task: str, count: int) -> list[dict]:
    now = datetime.now(timezone.utc)
    return [{"attempt_id": f"{task}-{i}", "campaign_id": "c", "task_id": task, "iteration": i, "stage": 1,
             "feasible": i > 0, "created_at": now} for i in range(count)]


def test_the_bar_advances_on_attempts_another_writer_commits(tmp_path):
    uri = str(tmp_path / "lake")
    with Lake.create(uri, "cpu") as writer, CampaignProgress(uri, poll_s=60) as bar:
        bar.on_event(ProgressEvent("campaign-start", "c", total_steps=3 * 4, budget=4))
        bar.refresh()
        assert bar.completed == 0
        writer.append("attempts", _attempts("t1", 3))
        writer.append("attempts", _attempts("t2", 1))
        bar.refresh()
        assert bar.completed == 4
        bar.on_event(ProgressEvent("task-end", "c", "t2", message="budget"))  # stopped early: whole budget
        assert bar.completed == 3 + 4
        writer.append("attempts", _attempts("t3", 4))
        bar.on_event(ProgressEvent("campaign-end", "c"))
        assert bar.completed == 3 + 4 + 4
