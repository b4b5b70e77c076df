"""Lake rows of one attempt: the attempt itself and the trace item derived from it.

The attempt row is the commit marker of a step: everything else a step writes (value updates, the
trace item) is derived from it and the step's recorded retrievals, so a resumed campaign can redo
those side effects idempotently.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime, timezone

from evokernel.agent.scoring import Scored
from evokernel.llm.base import Completion
from kernelbench_npu.spec import TaskSpec
from memory_lake import NewItem
from verifier.result import Verdict
from verifier.roofline import RooflinePosition


def attempt_row(*, attempt_id: str, campaign_id: str, task: TaskSpec, stage: int, iteration: int,
                method: str, model: str, backend: str, start_point_item_id: str | None,
                code: str | None, verdict: Verdict | None, feedback: str, completion: Completion,
                scored: Scored, verify_seconds: float) -> dict:
    gates = verdict.gates if verdict else ()
    passed = {g.name: g.passed for g in gates}
    latency = verdict.latency if verdict else None
    return {
        "attempt_id": attempt_id, "campaign_id": campaign_id, "task_id": task.task_id,
        "level": task.level, "category": task.category, "stage": stage, "iteration": iteration,
        "method": method, "model": model, "backend": backend,
        "start_point_item_id": start_point_item_id,
        "code_sha256": hashlib.sha256(code.encode()).hexdigest() if code else None,
        "code": code,
        "hack_passed": passed.get("hack", False), "compile_passed": passed.get("compile", False),
        "correct": passed.get("correctness", False), "latency_passed": passed.get("latency", False),
        "feasible": bool(verdict and verdict.feasible),
        "failed_gate": verdict.failed_gate if verdict else "generation",
        "gates_json": json.dumps([{"name": g.name, "passed": g.passed, "reason": g.reason,
                                   "seconds": round(g.seconds, 4)} for g in gates]),
        "feedback": feedback,
        "candidate_ms": latency.candidate_ms if latency else None,
        "reference_ms": latency.reference_ms if latency else None,
        "speedup": latency.speedup if latency else None,
        "ci_low": latency.ci_low if latency else None, "ci_high": latency.ci_high if latency else None,
        "flagged": latency.flagged if latency else False,
        "timing_flag": timing_class(latency.flagged, latency.flag_reason) if latency else None,
        **roofline_columns(latency.roofline if latency else None),
        **scored.columns(),
        "input_tokens": completion.input_tokens, "output_tokens": completion.output_tokens,
        "cost_usd": completion.cost_usd, "tokens_estimated": completion.tokens_estimated,
        "llm_seconds": completion.seconds,
        "verify_seconds": verify_seconds,
        "created_at": datetime.now(timezone.utc),
    }


_IMPLAUSIBLE = re.compile(r"implausible|exceeds the plausibility bound")


def timing_class(flagged: bool | None, reason: str | None) -> str:
    """clean | noisy | implausible, from the latency verdict's flag (its reason, or for rows written
    before attempts.timing_flag the feedback's "flag:" line; memory_lake's best_kernels.sql reads
    older rows the same way). An implausible timing never makes a kernel the best."""
    if not flagged:
        return "clean"
    flag_lines = [line for line in (reason or "").splitlines() if line.startswith("flag:")] or [reason or ""]
    return "implausible" if any(_IMPLAUSIBLE.search(line) for line in flag_lines) else "noisy"


def roofline_columns(roof: RooflinePosition | None) -> dict:
    """The attempts table's roofline columns (all null without a position)."""
    if roof is None:
        return {}
    return {"bytes_moved": roof.bytes_moved, "flops": roof.flops, "achieved_gbs": roof.achieved_gbs,
            "achieved_gflops": roof.achieved_gflops, "roof_gbs": roof.roof_gbs, "memory_gbs": roof.memory_gbs,
            "peak_gflops": roof.peak_gflops, "roof_fraction": roof.fraction, "roof_bound": roof.bound}


def trace_item(item_id: str, row: dict, task: TaskSpec) -> NewItem:
    """The trace item of an attempt that produced code: a kernel with its verdict."""
    status = "feasible" if row["feasible"] else f"failed at {row['failed_gate']}"
    # The paired speedup first: it is what compares across runs; the latency is of this run only.
    speed = (f", {row['speedup']:.2f}x vs reference ({row['candidate_ms']:.3f} ms in this run)"
             if row["candidate_ms"] and row["speedup"] else "")
    return NewItem(
        item_id=item_id, kind="trace", backend=row["backend"], task_id=row["task_id"],
        category=row["category"], title=f"{task.name} ({row['task_id']}) iteration {row['iteration']}: {status}{speed}",
        body=row["feedback"], code=row["code"], parent_item_id=row["start_point_item_id"],
        feasible=row["feasible"], latency_ms=row["candidate_ms"], speedup=row["speedup"],
        source_attempt_id=row["attempt_id"], campaign_id=row["campaign_id"],
    )
