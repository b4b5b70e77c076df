"""The progress read (Lake.campaign_progress): what another process's writes look like to the CLI."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from memory_lake import Lake, TaskProgress

T0 = datetime(2026, 11, 1, 3, tzinfo=timezone.utc)


def _attempt(campaign: str, task: str, iteration: int, feasible: bool, speedup: float | None = None) -> dict:
    return {"attempt_id": f"{campaign}-{task}-{iteration}", "campaign_id": campaign, "task_id": task,
            "iteration": iteration, "stage": 1, "feasible": feasible, "speedup": speedup,
            "created_at": T0 + timedelta(minutes=iteration, seconds=len(task))}


def test_progress_counts_committed_attempts_per_task_seen_from_another_connection(catalog_lake):
    with Lake.open(catalog_lake.root) as reader:  # the CLI's own connection, as in another process
        assert reader.campaign_progress("c1") == ()
        catalog_lake.append("attempts", [_attempt("c1", "t1", 0, False), _attempt("c1", "t1", 1, True, 1.5)])
        catalog_lake.append("attempts", [_attempt("c1", "t2", 0, False), _attempt("c2", "t1", 0, True, 9.0)])
        catalog_lake.append("attempts", [_attempt("c1", "t1", 2, True, 2.0), _attempt("c1", "t1", 3, True, None)])
        progress = reader.campaign_progress("c1")
    assert progress == (
        TaskProgress("t1", 4, True, 2.0, 3, T0 + timedelta(minutes=3, seconds=2)),
        TaskProgress("t2", 1, False, None, 0, T0 + timedelta(seconds=2)),
    )
