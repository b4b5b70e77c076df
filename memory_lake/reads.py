"""Typed reads the agent and the CLI run (resume, refinement context, distillation, progress), one
``.sql`` file each in memory_lake/sql/, returning frozen dataclasses or plain typed values.
``LakeReads`` is mixed into ``Lake``; every method reads the latest snapshot through ``Lake.query``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, make_dataclass
from datetime import datetime
from typing import Any, Callable

import pyarrow as pa

from memory_lake.models import RetrievedItem
from memory_lake.schema import ATTEMPTS
from memory_lake.sqlfiles import sql

# One attempts row, every column (resume completes an attempt's side effects from it).
AttemptRow = make_dataclass("AttemptRow", [(f.name, Any) for f in ATTEMPTS], frozen=True,
                            namespace={"as_dict": lambda self: {f.name: getattr(self, f.name) for f in fields(self)},
                                       "__doc__": "One attempts row (every column of schema.ATTEMPTS)."})


@dataclass(frozen=True)
class CampaignState:
    """The latest recorded row of a campaign."""

    campaign_id: str
    build_hash: str | None
    backend: str | None
    model: str | None
    method: str | None
    settings_json: str | None
    status: str | None
    started_at: datetime | None
    finished_at: datetime | None
    status_reason: str | None = None  # interrupted / failed: why


@dataclass(frozen=True)
class TaskProgress:
    """How far a campaign's task has come: its committed attempts so far."""

    task_id: str
    attempts: int
    feasible: bool
    best_speedup: float | None  # the best kernel's (best_kernels.sql)
    last_iteration: int
    last_at: datetime | None


@dataclass(frozen=True)
class BestKernel:
    """A task's best kernel in a campaign (best_kernels.sql: the one definition of "best")."""

    campaign_id: str
    task_id: str
    best_attempt_id: str
    best_iteration: int
    best_speedup: float
    best_ci_low: float | None
    best_ci_high: float | None
    best_ms: float | None
    best_timing_flag: str


@dataclass(frozen=True)
class ChildTrace:
    """A refinement that started from a given start point (a child in the task's trace tree)."""

    item_id: str
    kind: str
    title: str | None
    body: str | None
    code: str | None
    task_id: str | None
    feasible: bool | None
    latency_ms: float | None
    speedup: float | None
    source_attempt_id: str | None = None


@dataclass(frozen=True)
class FailureAndFix:
    """A failed attempt (its gate, feedback and code) and the first later attempt of its task that
    passed that gate (None when none did): what a failed trace teaches."""

    failed_gate: str | None
    iteration: int
    feedback: str | None
    code: str | None
    fix_iteration: int | None
    fix_code: str | None


@dataclass(frozen=True)
class TaskAttempt:
    """A committed attempt of a task in a campaign, as resume needs it."""

    attempt_id: str
    task_id: str
    iteration: int
    stage: int
    feasible: bool | None
    failed_gate: str | None
    candidate_ms: float | None
    speedup: float | None
    ci_low: float | None  # the speedup's 95% interval: the refine reward's noise (paired speedups)
    ci_high: float | None
    reward: float | None
    reward_normalized: float | None
    feedback: str | None
    code: str | None
    gates_json: str | None
    outcome_owner: str | None  # candidate | machine (null: written before attribution was recorded)
    machine_reason: str | None
    flagged: bool | None
    timing_flag: str | None  # clean | noisy | implausible (null: not timed, or written before the column)
    tokens: int | None
    seconds: float | None
    trace_item_id: str | None


@dataclass(frozen=True)
class FeasibleTrace:
    """A feasible kernel of a task in the lake (any campaign), with its verdict's feedback."""

    item_id: str
    code: str
    latency_ms: float | None
    speedup: float | None
    feedback: str | None
    iteration: int


class LakeReads:
    """The agent's reads, mixed into Lake (``self.query`` is Lake.query)."""

    query: Callable[..., pa.Table]

    def attempt_row(self, attempt_id: str) -> AttemptRow | None:
        rows = self.query(sql("attempt_row"), {"attempt_id": attempt_id}).to_pylist()
        return AttemptRow(**rows[0]) if rows else None

    def campaign_state(self, campaign_id: str) -> CampaignState | None:
        rows = self.query(sql("campaign_state"), {"campaign_id": campaign_id}).to_pylist()
        return CampaignState(**rows[0]) if rows else None

    def campaign_progress(self, campaign_id: str) -> tuple[TaskProgress, ...]:
        """Committed attempts per task of a campaign, whichever process or machine wrote them, with
        each task's best speedup (best_kernels.sql)."""
        rows = self.query(sql("campaign_progress"), {"campaign_id": campaign_id}).to_pylist()
        best = {b.task_id: b.best_speedup for b in self.best_kernels([campaign_id])}
        return tuple(TaskProgress(**row, best_speedup=best.get(row["task_id"])) for row in rows)

    def best_kernels(self, campaign_ids: list[str]) -> tuple[BestKernel, ...]:
        """The best kernel of each task of the campaigns (best_kernels.sql: the one definition)."""
        rows = self.query(sql("best_kernels"), {"campaign_ids": list(campaign_ids)}).to_pylist()
        return tuple(BestKernel(**row) for row in rows)

    def children_of(self, parent_item_id: str, limit: int) -> tuple[ChildTrace, ...]:
        rows = self.query(sql("children_of"), {"parent_item_id": parent_item_id, "limit": int(limit)}).to_pylist()
        return tuple(ChildTrace(**row) for row in rows)

    def comparison_recorded(self, campaign_id: str, task_id: str) -> bool:
        return self.query(sql("comparison_recorded"), {"campaign_id": campaign_id, "task_id": task_id}).num_rows > 0

    def distilled_for_task(self, campaign_id: str, task_id: str) -> tuple[str, ...]:
        table = self.query(sql("distilled_for_task"), {"campaign_id": campaign_id, "task_id": task_id})
        return tuple(table.column("item_id").to_pylist())

    def failure_and_fix(self, attempt_id: str) -> FailureAndFix | None:
        """A failed attempt and the first later attempt of its task that passed its gate."""
        rows = self.query(sql("failure_and_fix"), {"attempt_id": attempt_id}).to_pylist()
        return FailureAndFix(**rows[0]) if rows else None

    def distillations_recorded(self, campaign_id: str, task_id: str) -> int:
        """How many distillation calls of the task the campaign recorded in llm_calls (those that
        stored nothing included)."""
        return self.query(sql("distillations_recorded"), {"campaign_id": campaign_id, "task_id": task_id}).num_rows

    def feasible_traces(self, task_id: str) -> tuple[FeasibleTrace, ...]:
        """A task's feasible kernels, oldest first (what a new campaign would refine)."""
        rows = self.query(sql("feasible_traces"), {"task_id": task_id}).to_pylist()
        return tuple(FeasibleTrace(**row) for row in rows)

    def item_exists(self, item_id: str) -> bool:
        return self.query(sql("item_exists"), {"item_id": item_id}).num_rows > 0

    def refine_rewards(self, campaign_id: str) -> tuple[float, ...]:
        """Raw refining rewards of a campaign in commit order (nulls left out)."""
        table = self.query(sql("refine_rewards"), {"campaign_id": campaign_id})
        return tuple(float(r) for r in table.column("reward").to_pylist() if r is not None)

    def retrieved_for_attempt(self, attempt_id: str) -> tuple[RetrievedItem, ...]:
        rows = self.query(sql("retrieved_for_attempt"), {"attempt_id": attempt_id}).to_pylist()
        return tuple(RetrievedItem(**{**row, "title": row["title"] or "", "body": row["body"] or "",
                                      "code": row["code"] or ""}) for row in rows)

    def task_attempts(self, campaign_id: str, task_id: str) -> tuple[TaskAttempt, ...]:
        rows = self.query(sql("task_attempts"), {"campaign_id": campaign_id, "task_id": task_id}).to_pylist()
        return tuple(TaskAttempt(**row) for row in rows)

    def updates_for_attempt(self, attempt_id: str) -> frozenset[tuple[str, int]]:
        """The (item_id, stage) pairs whose Q an attempt already updated."""
        rows = self.query(sql("updates_for_attempt"), {"attempt_id": attempt_id}).to_pylist()
        return frozenset((row["item_id"], int(row["stage"])) for row in rows)
