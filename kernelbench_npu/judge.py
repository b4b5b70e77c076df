"""Which gates this machine can run for each task: the build's check of every ok task's verification path.

A task the build calls ok must be a task the verifier can judge. The build cannot know that alone:
the gates are the verifier's (its toolchains, interpreter, device), and ``kernelbench_npu`` imports
nothing internal. So :func:`kernelbench_npu.build.build_benchmark` takes a *judge* (the CLI passes
the verifier backend's, e.g. ``verifier.backends.triton_ascend.judge``): after lint, every ok task
goes to it as a :class:`JudgeRequest` and comes back as a :class:`TaskJudgement`:

- one :class:`GateHere` per gate (compile, correctness, latency): whether it runs on this machine
  for this task, and a note. A gate that cannot run names the *machine* ("this machine has no
  NPU: ..."), never the task; such a task stays ok (another machine can judge it).
- ``problem``: the verification path itself failed for this task (its inputs cannot be recorded
  by shape, its correctness sizes cannot be computed...): the task is quarantined with that
  reason, since no machine would judge it the way the build promised.

The notes go to ``measurements.parquet`` (column ``gates_here``, JSON), outside the build hash, like
every other fact about the build machine; ``evokernel build --explain TASK`` prints them.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Callable, Sequence

GATES_HERE = ("compile", "correctness", "latency")


@dataclass(frozen=True)
class JudgeRequest:
    task_id: str
    source: str  # the task as built (its own sizes)
    lint_source: str  # the task at the sizes its reference was linted at
    dtype: str
    specs: dict | None  # kernelbench_npu.shape_specs at the task's own sizes (NPU variants), else None


@dataclass(frozen=True)
class GateHere:
    gate: str
    runs: bool
    note: str  # how it runs here, or why not (naming the machine)

    def line(self) -> str:
        return f"{self.gate}: {'runs here' if self.runs else 'unavailable here'}: {self.note}"


@dataclass(frozen=True)
class TaskJudgement:
    gates: tuple[GateHere, ...]
    problem: str | None = None  # the task's own verification path failed: the quarantine reason

    def gates_json(self) -> str:
        return json.dumps([asdict(g) for g in self.gates])

    @property
    def judgeable(self) -> bool:
        """Compile and correctness both run here (what a campaign needs to score a draft)."""
        runs = {g.gate: g.runs for g in self.gates}
        return self.problem is None and runs.get("compile", False) and runs.get("correctness", False)


Progress = Callable[[str], None]
Judge = Callable[[Sequence[JudgeRequest], Progress], dict[str, TaskJudgement]]


def gates_from_json(text: str | None) -> tuple[GateHere, ...]:
    return tuple(GateHere(**g) for g in json.loads(text)) if text else ()
