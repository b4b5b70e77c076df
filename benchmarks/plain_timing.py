"""A kernel timed plainly, in a process of its own, the way a user would time it: no sandbox, no
monitor, the model called in a loop. What ``benchmarks.timing_fidelity`` holds the verifier against.

Modes (one per process, so that each starts clean):

- ``ref`` / ``cand``: the reference ``Model`` alone, or the known-good ``ModelNew`` alone, in a fresh
  process: warm-up, then ``--calls`` calls cycling through 8 input sets drawn beforehand; the median
  time per call (ms).
- ``alt``: both in one process, call by call in ABBA order; the median of the per-pair ratios
  (reference time / candidate time). Two OpenMP runtimes then share the process (torch's and the
  kernel's): whichever ran last leaves its threads spinning while the other runs.

Both use ``--threads`` threads (torch.set_num_threads and OMP_NUM_THREADS, as the verifier's sides),
the task's dtype and the build's adapted sizes.

Run: .venv/bin/python -m benchmarks.plain_timing MODE BUILD TASK_ID [--calls 400] [--threads 2]
(prints one JSON object)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import types
from pathlib import Path

INPUT_SETS = 8


def _candidate_class(task_id: str, adapted_source: str) -> type:
    from kernelbench_npu.known_good import solution_for

    module = types.ModuleType("candidate")
    module.__file__ = "candidate.py"
    exec(compile(solution_for(task_id, adapted_source), "candidate.py", "exec"), module.__dict__)  # noqa: S102
    return module.ModelNew


def _setup(build: str, task_id: str, mode: str):
    from kernelbench_npu import instantiate
    from kernelbench_npu.spec import load_build

    task = load_build(Path(build)).task(task_id)
    problem = instantiate.load_module(task.source, "problem.py")
    classes = {"ref": [problem.Model], "cand": [_candidate_class(task_id, task.source)]}.get(
        mode, [problem.Model, _candidate_class(task_id, task.source)])
    models = instantiate.build_models(problem, classes, task.dtype, 0)
    inputs = [instantiate.make_inputs(problem, task.dtype, 100 + i) for i in range(INPUT_SETS)]
    return models, inputs


def solo(model, inputs: list, calls: int) -> float:
    import torch

    times = []
    with torch.no_grad():
        for _ in range(3):
            for x in inputs:
                model(*x)
        for i in range(calls):
            x = inputs[i % len(inputs)]
            start = time.perf_counter_ns()
            model(*x)
            times.append(time.perf_counter_ns() - start)
    return statistics.median(times) / 1e6


def alternating(ref, cand, inputs: list, calls: int) -> float:
    import torch

    ratios = []
    with torch.no_grad():
        for _ in range(3):
            for x in inputs:
                ref(*x)
                cand(*x)
        for i in range(max(1, calls // 2)):
            x = inputs[i % len(inputs)]
            took = {id(ref): 0, id(cand): 0}
            for model in ((ref, cand, cand, ref) if i % 2 == 0 else (cand, ref, ref, cand)):
                start = time.perf_counter_ns()
                model(*x)
                took[id(model)] += time.perf_counter_ns() - start
            ratios.append(took[id(ref)] / max(1, took[id(cand)]))
    return statistics.median(ratios)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("ref", "cand", "alt"))
    parser.add_argument("build")
    parser.add_argument("task_id")
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    models, inputs = _setup(args.build, args.task_id, args.mode)
    if args.mode == "alt":
        out = {"ratio": alternating(models[0], models[1], inputs, args.calls)}
    else:
        out = {"ms": solo(models[0], inputs, args.calls)}
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    main()
