"""What the float64 check, the audit and the check of every timed output add to one verification.

End-to-end verification times on a shared machine vary by seconds, far more than these checks
cost, so this measures their own work in process, with the verifier's functions and the default
settings (5 correctness trials, 2 threads), on bundled level-1 tasks at the CPU size profile
(benchmarks.verify_speed.bundled_task): the honest candidate's outputs are the reference's own.

- ``fp64 worker``: the reference worker's float64 copy of the model and its runs on the
  correctness trials (verifier.sandbox.fp64_reference);
- ``fp64 parent``: the ratio check on those trials (verifier.gates.fp64_check);
- ``audit``: the two audit trials: inputs made by the reference worker, one reference forward and the
  trivial-predictor errors each, and the monitor's full comparison;
- ``timed checks``: the monitor's check of every timed output against the reference's on the same
  inputs (verifier.monitor.timing: a sample of elements per pair), for 90 pairs;
- ``reference``: for scale, the reference worker's task-dtype work on the other trials.

CPU seconds (``time.process_time``, all threads of this process), median of ``--repeats``.

Run: .venv/bin/python -m benchmarks.trust_cost [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from benchmarks.verify_speed import bundled_task
from verifier.gates import fp64_check
import numpy as np

from verifier.gates.correctness import Tolerance, compare_trial
from verifier.gates.trial_data import ReferenceOutputs, TrialOutputs
from verifier.monitor.timing import mismatch
from verifier.sandbox import inputs as inp
from verifier.sandbox.fp64_reference import Fp64Model
from verifier.sandbox.reference_worker import CHECKED_IN_FLOAT64, trivial_errors

TASKS = ("001_relu", "013_softmax", "015_layer_norm", "019_matmul_square", "025_conv2d")
SEED = 7


def _reference(model, problem, trial: inp.Trial) -> tuple[list, list, ReferenceOutputs]:
    inputs = inp.inputs_for(problem, SEED, trial)
    with torch.no_grad():
        result = model(*inputs)
    outputs = list(result) if isinstance(result, (tuple, list)) else [result]
    arrays = tuple(inp.to_numpy(o) for o in outputs)
    numpy_inputs = [inp.to_numpy(x) if isinstance(x, torch.Tensor) else x for x in inputs]
    ref = ReferenceOutputs(trial.index, tuple(str(o.dtype).removeprefix("torch.") for o in outputs), arrays,
                               tuple(trivial_errors(a, numpy_inputs) for a in arrays))
    return inputs, outputs, ref


def _as_candidate(trial: inp.Trial, ref: ReferenceOutputs) -> TrialOutputs:
    return TrialOutputs(trial.index, trial.kind, trial.distribution, ref.dtypes, ref.arrays)


def measure_once(name: str) -> dict[str, float]:
    task = bundled_task(name)
    problem = inp.load_problem(task.source)
    (model,) = inp.build_models(problem, [problem.Model], 1)
    plan = inp.plan(5)
    tol = Tolerance(task.atol, task.rtol, 10.0)
    cost = dict.fromkeys(("fp64 worker", "fp64 parent", "audit", "timed checks", "reference"), 0.0)
    clock = time.process_time
    start = clock()
    wide = Fp64Model(model)
    cost["fp64 worker"] += clock() - start
    for trial in plan:
        start = clock()
        inputs, outputs, ref = _reference(model, problem, trial)
        if trial.kind == "audit":
            compare_trial(_as_candidate(trial, ref), ref, tol)
            cost["audit"] += clock() - start
            continue
        cost["reference"] += clock() - start
        if trial.kind in CHECKED_IN_FLOAT64:
            start = clock()
            fp64 = wide.reference(inputs, outputs)
            cost["fp64 worker"] += clock() - start
            start = clock()
            fp64_check.check_outputs(ref.arrays, ReferenceOutputs(ref.index, ref.dtypes, ref.arrays,
                                                                      ref.trivial, fp64))
            cost["fp64 parent"] += clock() - start
    rng = np.random.default_rng(SEED)
    start = clock()
    for _ in range(90):
        mismatch(ref.arrays, ref.arrays, tol, rng)
    cost["timed checks"] += clock() - start
    return cost


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(2)
    print("note: CPU seconds in process; on a loaded machine cache contention still inflates them")
    print(f"{'task':20} {'reference':>10} {'fp64 worker':>12} {'fp64 parent':>12} {'audit':>10} {'timed checks':>13}"
          "   (ms per verification)")
    for name in TASKS:
        runs = [measure_once(name) for _ in range(args.repeats)]
        row = {k: statistics.median(r[k] for r in runs) * 1e3 for k in runs[0]}
        print(f"{name:20} {row['reference']:10.1f} {row['fp64 worker']:12.1f} {row['fp64 parent']:12.1f} "
              f"{row['audit']:10.1f} {row['timed checks']:13.1f}")


if __name__ == "__main__":
    main()
