"""The typed values callers exchange with the lake: new items, seed items, retrieval requests
and results, value updates. All frozen dataclasses; validation happens on construction."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from memory_lake.errors import LakeError
from memory_lake.schema import ITEM_KINDS, STAGES


@dataclass(frozen=True)
class SeedItemRow:
    """Backend knowledge for a new lake (same fields as verifier's SeedItem, which also fits)."""

    title: str
    body: str
    code: str = ""
    category: str = "general"


@dataclass(frozen=True)
class NewItem:
    """A memory item to add; the lake assigns embedding_text, created_at and (unless given) item_id."""

    kind: str
    backend: str
    title: str
    body: str
    task_id: str | None = None
    category: str = "general"
    code: str = ""
    parent_item_id: str | None = None
    feasible: bool | None = None
    latency_ms: float | None = None
    speedup: float | None = None
    source_attempt_id: str | None = None
    campaign_id: str | None = None
    item_id: str | None = None  # None: the lake assigns one; callers that must be idempotent pass their own

    def __post_init__(self) -> None:
        if self.kind not in ITEM_KINDS:
            raise LakeError(f"items: kind: {self.kind!r} is not one of {', '.join(ITEM_KINDS)}")
        if not self.backend:
            raise LakeError("items: backend: must not be empty")


@dataclass(frozen=True)
class RetrievalRequest:
    """One retrieval: a pool of K = lam * n items by similarity, then n chosen by the stage's Q."""

    attempt_id: str
    task_id: str | None
    task_text: str
    category: str | None
    backend: str
    stage: int
    n: int = 5
    lam: int = 3
    epsilon: float = 0.1
    seed: int = 0
    strategy: Literal["value", "heuristic"] = "value"
    kinds: tuple[str, ...] | None = None
    include_templates: bool = True
    exclude_item_ids: tuple[str, ...] = ()
    max_templates: int | None = None  # api_templates added in drafting (None = all of the backend)
    # relevance rules (retrieval.eligible); the defaults apply none
    feasible_traces_only: bool = False  # traces only when feasible and timed (optimisation traces)
    fastest_trace_per_task: bool = False  # of each task's optimisation traces only its fastest in the pool
    other_tasks_traces_only: bool = False  # the task's own traces left out (refining shows its own kernels anyway)
    min_relevance: float = 0.0  # other categories' items need similarity >= this share of the pool's best
    category_first: bool = False  # fill the slots from the task's category first
    other_categories_min_q: float | None = None  # items of other categories need a stage Q above this
    overfetch: int = 1  # pool of overfetch * lam * n by similarity before the rules, cut to lam * n after
    spare: int = 0  # choices made after the n, from the same pool (for a caller that may skip some)
    q_prior: float | None = None  # the Q of an item never updated at this stage (None: the lake's q_init)
    # the Q of such a lesson (experience, best practice) of the request's own task or op category (None: q_prior)
    q_prior_related: float | None = None
    q_weight: float = 1.0  # value strategy: score = (1 - w) z(similarity) + w z(Q) over the pool (1: Q only)

    def __post_init__(self) -> None:
        if self.stage not in STAGES:
            raise LakeError(f"retrieval: stage: {self.stage!r} is not 1 or 2")
        if self.n < 0 or self.lam < 1:
            raise LakeError(f"retrieval: n={self.n}, lam={self.lam}: need n >= 0 and lam >= 1")
        if not 0.0 <= self.min_relevance <= 1.0 or self.overfetch < 1 or self.spare < 0:
            raise LakeError(f"retrieval: min_relevance={self.min_relevance}, overfetch={self.overfetch}: need "
                            "0 <= min_relevance <= 1, overfetch >= 1, spare >= 0")
        if not 0.0 <= self.epsilon <= 1.0:
            raise LakeError(f"retrieval: epsilon: {self.epsilon} is outside [0, 1]")
        if not 0.0 <= self.q_weight <= 1.0:
            raise LakeError(f"retrieval: q_weight: {self.q_weight} is outside [0, 1]")
        if self.strategy not in ("value", "heuristic"):
            raise LakeError(f"retrieval: strategy: {self.strategy!r} is not 'value' or 'heuristic'")
        for kind in self.kinds or ():
            if kind not in ITEM_KINDS:
                raise LakeError(f"retrieval: kinds: {kind!r} is not one of {', '.join(ITEM_KINDS)}")

    @property
    def pool_size(self) -> int:
        return self.lam * self.n


@dataclass(frozen=True)
class RetrievedItem:
    item_id: str
    kind: str
    title: str
    body: str
    code: str
    task_id: str | None
    rank: int  # 0 = first in the prompt
    similarity: float
    q_value: float
    explored: bool  # chosen by the epsilon branch
    strategy: str  # value | heuristic | template
    feasible: bool | None = None  # traces: whether the kernel passed hack, compile and correctness
    source_attempt_id: str | None = None  # the attempt that made the item (traces: their kernel's attempt)


@dataclass(frozen=True)
class ValueUpdate:
    item_id: str
    stage: int
    reward: float
    alpha: float
    attempt_id: str | None = None
    campaign_id: str | None = None
    prior: float | None = None  # Q before the item's first update of this stage (None: the lake's q_init)

    def __post_init__(self) -> None:
        if self.stage not in STAGES:
            raise LakeError(f"value_updates: stage: {self.stage!r} is not 1 or 2")
        if not 0.0 < self.alpha <= 1.0:
            raise LakeError(f"value_updates: alpha: {self.alpha} is outside (0, 1]")


@dataclass(frozen=True)
class TableStats:
    table: str
    rows: int
    files: int
    bytes: int


@dataclass(frozen=True)
class Expiry:
    """What ``compact(expire_older_than=...)`` expired and deleted (see maintenance.py)."""

    snapshots: int  # snapshots expired by this run
    first_expired: int | None
    last_expired: int | None
    files_deleted: int  # files only expired snapshots used, unused for at least grace_s
    orphans_deleted: int  # files no snapshot lists (writers that died before committing), as old
    oldest_kept: int | None  # time travel now reaches back to this snapshot
    oldest_kept_time: datetime | None
    grace_s: int


@dataclass(frozen=True)
class CompactionResult:
    tables: tuple[str, ...]
    files_before: int
    files_after: int
    bytes_before: int
    bytes_after: int
    extra: dict = field(default_factory=dict)
    expired: Expiry | None = None  # with expire_older_than
