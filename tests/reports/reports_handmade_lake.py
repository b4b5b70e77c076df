"""A small hand-made lake with known answers for the report's metric tests.

Campaign c1 (evokernel, budget 10) over 4 tasks, campaign c2 (pass-at-k) over 2 tasks. The
expected values quoted in tests/reports/test_reports_metrics.py (and the dirty variant in make_dirty_rows) are derived by hand from these rows.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

T0 = datetime(2026, 11, 1, tzinfo=timezone.utc)
TASKS = {  # task_id -> (level, category)
    "t1": (1, "activation"),
    "t2": (1, "activation"),
    "t3": (1, "matmul"),
    "t4": (2, "fusion"),
}


def _attempt(campaign, task, iteration, gates, ms=None, speedup=None, ci=None, stage=1, reward=None,
             estimated=False):
    hack, comp, correct = gates
    feasible = hack and comp and correct
    level, category = TASKS[task]
    return {
        "attempt_id": f"{campaign}-{task}-{iteration}", "campaign_id": campaign, "task_id": task,
        "level": level, "category": category, "stage": stage if feasible or stage == 2 else 1,
        "iteration": iteration, "method": "evokernel" if campaign == "c1" else "pass-at-k",
        "model": "scripted:demo", "backend": "cpu", "code_sha256": f"h{campaign}{task}{iteration}",
        "hack_passed": hack, "compile_passed": comp, "correct": correct, "feasible": feasible,
        "latency_passed": feasible and ms is not None,
        "failed_gate": None if feasible else ("hack" if not hack else "compile" if not comp else "correctness"),
        "candidate_ms": ms, "reference_ms": None if ms is None else ms * speedup,
        "speedup": speedup, "ci_low": None if ci is None else ci[0], "ci_high": None if ci is None else ci[1],
        "flagged": False, "reward": reward if reward is not None else (1.0 if feasible else -1.0),
        "input_tokens": 100, "output_tokens": 50, "cost_usd": 0.01, "llm_seconds": 2.0, "verify_seconds": 1.0,
        "created_at": T0 + timedelta(minutes=iteration), "tokens_estimated": estimated,
    }


# Roofline positions of c1's best kernels on a machine probed at 20 GB/s and 100 GFLOP/s:
# t1 memory-bound (8 MB and 2 MFLOP in 1 ms: 8 GB/s = 40%; its reference, 2 ms, 1 GFLOP/s),
# t2 compute-bound (1 MB and 100 MFLOP in 2 ms: 50 GFLOP/s = 50%; its reference, 5 ms, 20 GFLOP/s).
_PEAKS = {"roof_gbs": 20.0, "memory_gbs": 20.0, "peak_gflops": 100.0}
ROOF_T1 = {"bytes_moved": 8_000_000, "flops": 2_000_000, "achieved_gbs": 8.0, "achieved_gflops": 2.0,
           "roof_fraction": 0.4, "roof_bound": "memory", **_PEAKS}
ROOF_T2 = {"bytes_moved": 1_000_000, "flops": 100_000_000, "achieved_gbs": 0.5, "achieved_gflops": 50.0,
           "roof_fraction": 0.5, "roof_bound": "compute", **_PEAKS}

NO, COMPILES, FEASIBLE, HACKED = (True, False, False), (True, True, False), (True, True, True), (False, False, False)


def attempts() -> list[dict]:
    return [
        # c1 / t1: first feasible draft 2.0 ms, best 1.0 ms (speedup 2.0) -> draft speedup 2.0
        _attempt("c1", "t1", 0, NO, estimated=True),  # the server reported no usage
        _attempt("c1", "t1", 1, COMPILES),
        _attempt("c1", "t1", 2, FEASIBLE, ms=2.0, speedup=1.0, ci=(0.9, 1.1)),
        _attempt("c1", "t1", 3, FEASIBLE, ms=1.0, speedup=2.0, ci=(1.8, 2.2), stage=2, reward=0.5) | ROOF_T1,
        # c1 / t2: draft 4.0 ms (1.25x), refined 2.0 ms (2.5x) -> draft speedup 2.0
        _attempt("c1", "t2", 0, FEASIBLE, ms=4.0, speedup=1.25, ci=(1.2, 1.3)),
        _attempt("c1", "t2", 1, FEASIBLE, ms=2.0, speedup=2.5, ci=(2.4, 2.6), stage=2, reward=0.7) | ROOF_T2,
        # c1 / t3: one feasible kernel 3.0 ms (1.2x), then a wrong one -> draft speedup 1.0
        _attempt("c1", "t3", 0, FEASIBLE, ms=3.0, speedup=1.2, ci=(1.1, 1.3)),
        _attempt("c1", "t3", 1, COMPILES, stage=2),
        # c1 / t4: never correct within the budget (hack fail, compile fail, wrong); the
        # feasible attempt at iteration 10 is outside the budget of 10 and must not count
        _attempt("c1", "t4", 0, HACKED),
        _attempt("c1", "t4", 1, NO),
        _attempt("c1", "t4", 2, COMPILES),
        _attempt("c1", "t4", 10, FEASIBLE, ms=1.0, speedup=9.0, ci=(8.0, 10.0)),
        # c2: t1 correct but slower than PyTorch (0.5x), t2 never compiles
        _attempt("c2", "t1", 0, FEASIBLE, ms=2.0, speedup=0.5, ci=(0.4, 0.6)),
        _attempt("c2", "t2", 0, NO),
        _attempt("c2", "t2", 1, NO),
    ]


def campaigns() -> list[dict]:
    return [
        {"campaign_id": "c1", "build_hash": "b1", "backend": "cpu", "model": "scripted:demo", "method": "evokernel",
         "settings_json": json.dumps({"budget": 10}), "status": "running", "started_at": T0, "recorded_at": T0},
        {"campaign_id": "c1", "build_hash": "b1", "backend": "cpu", "model": "scripted:demo", "method": "evokernel",
         "settings_json": json.dumps({"budget": 10}), "status": "finished", "started_at": T0,
         "finished_at": T0 + timedelta(hours=1), "recorded_at": T0 + timedelta(hours=1)},
        {"campaign_id": "c2", "build_hash": "b1", "backend": "cpu", "model": "scripted:demo", "method": "pass-at-k",
         "settings_json": json.dumps({"budget": 10}), "status": "finished", "started_at": T0, "recorded_at": T0},
    ]


def items() -> list[dict]:
    return [
        {"item_id": "i1", "kind": "api_template", "backend": "cpu", "category": "general", "title": "OpenMP loop template"},
        {"item_id": "i2", "kind": "experience", "backend": "cpu", "category": "activation", "title": "vectorise expf"},
        {"item_id": "i3", "kind": "trace", "backend": "cpu", "task_id": "t2", "category": "activation",
         "title": "t2 draft kernel"},
    ]


def retrievals() -> list[dict]:
    rows = [(f"c1-t1-{i}", "i1", 1, 0) for i in range(3)]  # t1 drafting: the template each time
    rows += [("c1-t1-2", "i2", 1, 1), ("c1-t1-3", "i3", 2, 0)]  # i2 in the solving attempt; i3 after it
    rows += [("c1-t2-0", "i1", 1, 0), ("c1-t2-0", "i3", 1, 1)]
    rows += [("c1-t4-0", "i1", 1, 0), ("c1-t4-1", "i2", 1, 0)]
    return [{"attempt_id": a, "item_id": i, "stage": s, "rank": r, "created_at": T0} for a, i, s, r in rows]


def value_updates() -> list[dict]:
    q1 = [("i1", 1, "c1-t1-0", -1.0), ("i1", 1, "c1-t1-1", -1.0), ("i1", 1, "c1-t1-2", 1.0),
          ("i2", 1, "c1-t1-2", 1.0), ("i1", 1, "c1-t2-0", 1.0), ("i3", 2, "c1-t1-3", 0.5)]
    rows, q = [], {}
    for seq, (item, stage, attempt, reward) in enumerate(q1, start=1):
        before = q.get((item, stage), 0.0)
        after = before + 0.3 * (reward - before)
        q[(item, stage)] = after
        rows.append({"item_id": item, "stage": stage, "attempt_id": attempt, "campaign_id": "c1", "reward": reward,
                     "alpha": 0.3, "q_before": before, "q_after": after, "seq": seq, "created_at": T0})
    return rows


def llm_calls() -> list[dict]:
    return [
        {"call_id": "d1", "campaign_id": "c1", "task_id": "t1", "purpose": "distill", "model": "scripted:demo",
         "input_tokens": 10, "output_tokens": 10, "cost_usd": 0.002, "seconds": 1.0, "created_at": T0},
        {"call_id": "d2", "campaign_id": "c1", "task_id": None, "purpose": "distill", "model": "scripted:demo",
         "input_tokens": 20, "output_tokens": 10, "cost_usd": 0.005, "seconds": 1.0, "created_at": T0,
         "tokens_estimated": True},
    ]


TABLE_ROWS = {
    "items": items, "attempts": attempts, "retrievals": retrievals,
    "value_updates": value_updates, "campaigns": campaigns, "llm_calls": llm_calls,
}


def make_lake(root, tables=TABLE_ROWS, extra_attempts=()):
    """A real Lake at ``root`` holding ``tables`` (name -> row factory) and any extra attempts."""
    from memory_lake import Lake

    lake = Lake.create(root, "cpu")
    for table, rows in tables.items():
        lake.append(table, rows())
    if extra_attempts:
        lake.append("attempts", list(extra_attempts))
    return lake


def dirty_attempts() -> list[dict]:
    """Attempts that break the data-quality suite, one rule each (see test_reports_quality.py)."""
    ghost = _attempt("c1", "t1", 5, NO) | {"attempt_id": "ghost-1", "campaign_id": "ghost"}
    big_reward = _attempt("c1", "t2", 5, NO) | {"attempt_id": "bad-reward", "reward": 1.5}
    hacked_correct = _attempt("c1", "t3", 5, FEASIBLE, ms=1.0, speedup=1.1, ci=(1.0, 1.2)) | {
        "attempt_id": "hacked-correct", "hack_passed": False}
    infinite = _attempt("c1", "t3", 6, FEASIBLE, ms=1.0, speedup=1.1, ci=(1.0, 1.2)) | {
        "attempt_id": "inf-speedup", "speedup": float("inf"), "ci_high": float("inf")}
    outside_ci = _attempt("c1", "t3", 7, FEASIBLE, ms=1.0, speedup=1.1, ci=(1.0, 1.2)) | {
        "attempt_id": "outside-ci", "ci_low": 1.5, "ci_high": 1.9}
    return [ghost, big_reward, hacked_correct, infinite, outside_ci]
