"""The value types of prompt building: what goes in (context items, attempt summaries) and
what comes out (a prompt, an extracted kernel, distilled memory items)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from evokernel.prompts.budget import SectionSize

DISTILLED_KINDS = ("experience", "best_practice")


@runtime_checkable
class ContextItem(Protocol):
    """A memory item shown to the LLM (memory_lake's RetrievedItem satisfies this)."""

    kind: str  # api_template | experience | trace | best_practice
    title: str
    body: str
    code: str | None
    q_value: float


@dataclass(frozen=True)
class Prompt:
    """What the LLM is sent, with the size of each section (empty for the distill prompt)."""

    system: str
    user: str
    sections: tuple[SectionSize, ...] = ()

    @property
    def chars(self) -> int:
        return len(self.system) + len(self.user)


@dataclass(frozen=True)
class AttemptSummary:
    """One attempt of a finished task, as the distillation prompt shows it."""

    iteration: int
    stage: str  # "draft" | "refine"
    feasible: bool
    feedback: str  # the verifier's feedback (or the extraction problem)
    code: str | None = None
    latency_ms: float | None = None
    speedup: float | None = None  # over the reference: median over rounds of the paired ratio
    ci_low: float | None = None  # its 95% interval
    ci_high: float | None = None
    failed_gate: str | None = None
    passed_gates: tuple[str, ...] = ()  # the gates this attempt passed (what a later fix of a failure passes)
    is_best: bool = False  # the task's best kernel (memory_lake best_kernels.sql)


@dataclass(frozen=True)
class DistilledItem:
    kind: str  # "experience" | "best_practice"
    title: str
    body: str


@dataclass(frozen=True)
class CodeExtraction:
    """The kernel found in an answer, or a one-line problem to feed back to the LLM."""

    code: str | None
    problem: str | None

    @property
    def ok(self) -> bool:
        return self.code is not None
