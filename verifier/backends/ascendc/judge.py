"""The build's check of the ascendc verification path, per task, on this machine
(:mod:`kernelbench_npu.judge`; ``evokernel build --backend ascendc`` passes :func:`judge_tasks`).

Ascend C needs CANN to compile and an NPU to run: every gate's availability is the machine's, the
same for every task, and its note names what this machine lacks. The task-side part of the path
(the inputs described by shape at the task's own sizes) was checked by the build's planning
(:mod:`kernelbench_npu.shape_specs`): a task whose inputs need values is already quarantined.
"""

from __future__ import annotations

from typing import Callable, Sequence

from kernelbench_npu.judge import GateHere, JudgeRequest, TaskJudgement


def judge_tasks(requests: Sequence[JudgeRequest], progress: Callable[[str], None] | None = None,
                backend=None) -> dict[str, TaskJudgement]:
    from verifier.backends.ascendc import AscendCBackend

    availability = (backend or AscendCBackend()).availability()
    gates = tuple(GateHere(g.gate, g.available, g.note if g.available else f"this machine: {g.note}")
                  for g in availability.gates)
    return {r.task_id: TaskJudgement(gates) for r in requests}
