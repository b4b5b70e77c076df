"""The methods compared in the paper, as policies over one shared loop (no copy-pasted stages).

| method     | memory retrieval          | learns Q | refine start point        | context of refine      |
|------------|---------------------------|----------|---------------------------|------------------------|
| evokernel  | value (epsilon-greedy Q)  | yes      | epsilon-greedy by Q2      | traces, practices, kids|
| heuristic  | similarity only           | no       | best latency              | traces, practices, kids|
| refinement | none (own task only)      | no       | best latency              | the start point only   |
| pass-at-k  | none                      | no       | none: independent samples | none, no feedback      |
| no-memory  | none (own task only)      | Q2 of its| epsilon-greedy by Q2      | the start point and    |
|            |                           | kernels  |                           | its children           |

``no-memory`` is evokernel with retrieval switched off: the same two stages, start-point values and
feedback, no item from the shared memory in any prompt (the ablation of the memory itself).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MethodPolicy:
    name: str
    retrieval: str | None  # "value" | "heuristic" | None (no shared memory)
    learns_values: bool
    refines: bool  # False: every iteration is an independent draft (pass@k)
    start_point: str  # "q2" (epsilon-greedy by Q2) | "best" (lowest latency) | "none"
    uses_feedback: bool  # the previous attempt's verifier feedback goes into the next prompt
    distills: bool  # experience summaries and best practices after each task

    @property
    def uses_memory(self) -> bool:
        return self.retrieval is not None


METHODS: dict[str, MethodPolicy] = {
    "evokernel": MethodPolicy("evokernel", "value", True, True, "q2", True, True),
    "heuristic": MethodPolicy("heuristic", "heuristic", False, True, "best", True, True),
    "refinement": MethodPolicy("refinement", None, False, True, "best", True, False),
    "pass-at-k": MethodPolicy("pass-at-k", None, False, False, "none", False, False),
    "no-memory": MethodPolicy("no-memory", None, True, True, "q2", True, False),
}


def method_policy(name: str) -> MethodPolicy:
    try:
        return METHODS[name]
    except KeyError:
        raise ValueError(f"unknown method {name!r}; known: {', '.join(METHODS)}") from None
