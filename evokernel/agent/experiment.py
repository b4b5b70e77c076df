"""The paper's comparison protocol as data: methods x seeds on one build, each run on its own copy
of a starting lake, the same LLM-call budget per task (Prefect-free; flows/experiment.py runs it).

An experiment is a directory (``out``):

- ``experiment.json``: what it compares (build hash, methods, seeds, tasks, LLM, budget); a rerun
  with the same directory resumes it and must ask for the same, else a one-line :class:`ExperimentError`;
- ``lakes/<method>-s<seed>/``: each run's lake, a copy of the starting lake (or a new one), made
  once; a copy is complete when ``lakes/<name>.copied`` exists (a half-made one is made again);
- each run is the campaign ``<experiment id>-<method>-s<seed>`` in its own lake, resumable by id;
- ``report/``: the side-by-side report (reports/experiment.py).

Equal budget: ``llm_calls_per_task`` LLM calls per task for every method. A method that distils
after each task (evokernel, heuristic) spends one of them on the distillation, so it gets one
generation fewer; the others spend them all on generations. The seed names the campaign, and with
it every random choice of retrieval and start points (evokernel.agent.context.seed_for).
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

from evokernel.agent.methods import METHODS, method_policy
from kernelbench_npu.spec import load_build
from memory_lake import Lake

DEFAULT_METHODS = ("evokernel", "pass-at-k", "refinement", "heuristic", "no-memory")


class ExperimentError(ValueError):
    """The experiment cannot start or resume as asked (one line)."""


@dataclass(frozen=True)
class ExperimentRun:
    method: str
    seed: int
    campaign_id: str
    lake: str
    budget: int  # generation iterations per task (the LLM-call budget less any distillation call)

    @property
    def name(self) -> str:
        return f"{self.method}-s{self.seed}"


@dataclass(frozen=True)
class ExperimentPlan:
    experiment_id: str
    out: str
    build: str
    build_hash: str
    llm: str
    methods: tuple[str, ...]
    seeds: tuple[int, ...]
    llm_calls_per_task: int
    tasks: tuple[str, ...]
    start_lake: str | None

    def runs(self) -> tuple[ExperimentRun, ...]:
        lakes = Path(self.out) / "lakes"
        return tuple(ExperimentRun(method, seed, f"{self.experiment_id}-{method}-s{seed}", str(lakes / f"{method}-s{seed}"),
                                   self.llm_calls_per_task - (1 if method_policy(method).distills else 0))
                     for method in self.methods for seed in self.seeds)

    @property
    def report_dir(self) -> Path:
        return Path(self.out) / "report"


def plan_experiment(out: str | Path, build: str | Path, llm: str, methods: Sequence[str] = DEFAULT_METHODS,
                    seeds: Sequence[int] = (0, 1), llm_calls_per_task: int = 30, tasks: Sequence[str] = (),
                    start_lake: str | None = None, experiment_id: str | None = None) -> ExperimentPlan:
    """The plan of a new experiment in ``out``, or of the one there (which must ask for the same)."""
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise ExperimentError(f"--methods: {unknown[0] if unknown else '(none)'!r} is not a method "
                              f"(known: {', '.join(METHODS)})")
    if len(set(seeds)) != len(seeds) or not seeds:
        raise ExperimentError(f"--seeds: {list(seeds)}: give one or more distinct seeds")
    if llm_calls_per_task < 2:
        raise ExperimentError(f"--llm-calls: {llm_calls_per_task}: at least 2 per task (a distilling method spends one)")
    if start_lake is not None and not Lake.exists(start_lake):
        raise ExperimentError(f"--start-lake {start_lake}: no memory lake there")
    built = load_build(build)
    for task_id in tasks:
        built.task(task_id)  # an unknown task is a one-line BuildError here, not mid-experiment
    out = Path(out)
    name = experiment_id or re.sub(r"[^A-Za-z0-9._-]+", "-", out.resolve().name)
    plan = ExperimentPlan(name, str(out), str(build), built.build_hash, llm, tuple(methods), tuple(int(s) for s in seeds),
                          int(llm_calls_per_task), tuple(tasks), str(start_lake) if start_lake else None)
    recorded = out / "experiment.json"
    if recorded.is_file():
        before = json.loads(recorded.read_text())
        wanted = json.loads(json.dumps(asdict(plan)))
        differs = [k for k in wanted if k not in ("out", "build") and before.get(k) != wanted[k]]
        if differs:
            raise ExperimentError(f"{recorded}: this experiment was started with {differs[0]}={before.get(differs[0])!r}; "
                                  f"cannot resume it with {wanted[differs[0]]!r} (use another --out)")
    else:
        out.mkdir(parents=True, exist_ok=True)
        tmp = recorded.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(asdict(plan), indent=2) + "\n")
        tmp.replace(recorded)
    return plan


def prepare_run_lake(plan: ExperimentPlan, run: ExperimentRun) -> str:
    """The run's lake: a copy of the starting lake made once (nothing to copy without one: the
    campaign creates a new lake). Returns what was done, in words."""
    lake, marker = Path(run.lake), Path(run.lake).with_suffix(".copied")
    if plan.start_lake is None:
        return "a new lake (no starting lake)"
    if marker.is_file():
        return "copy of the starting lake, made earlier"
    if lake.exists():  # a copy interrupted half-way: it is derived data, made again
        shutil.rmtree(lake)
    lake.parent.mkdir(parents=True, exist_ok=True)
    copied, result = Lake.migrate(plan.start_lake, lake)  # rows, ids, Q values and seqs; its own files
    copied.close()
    marker.write_text(json.dumps({"from": plan.start_lake, "rows": result.rows, "q_values": result.q_values}) + "\n")
    return f"copy of {plan.start_lake} ({sum(result.rows.values())} rows, {result.q_values} values)"
