"""The trusted reference worker: a separate process that never imports candidate code.

Run as ``python -m verifier.sandbox.reference_worker IN_FD OUT_FD``. Builds ``Model`` from the task source
with the verification's init seed, computes the outputs of every trial of the plan (same inputs
as the sandbox child, from the same secret seed) and the errors of trivial predictors (zeros,
the output mean, an input copy) used by the scale-aware correctness check.

References are always computed on the CPU, whatever the candidate's backend: the worker never
imports candidate or backend code, and the sandbox child copies a GPU candidate's outputs to the
CPU for the comparison (inputs are made on the CPU from the same seed, so both sides agree bit
for bit before the child places them on the device).
"""

from __future__ import annotations

import sys
import time

import numpy as np

from verifier.sandbox.channel import read_message, write_message


def trivial_errors(ref: np.ndarray, inputs: list) -> dict[str, float]:
    r = ref.astype(np.float64)
    finite = np.isfinite(r)
    if not finite.all():
        return {}
    errors = {"zeros": float(np.linalg.norm(r)), "mean": float(np.linalg.norm(r - r.mean()))}
    for x in inputs:
        if hasattr(x, "shape") and tuple(x.shape) == r.shape:
            errors["input copy"] = float(np.linalg.norm(r - np.asarray(x, dtype=np.float64)))
            break
    return errors


def main(argv: list[str]) -> int:
    in_fd, out_fd = int(argv[1]), int(argv[2])
    cfg = read_message(in_fd, time.monotonic() + 120, None).header
    nonce = cfg["nonce"]
    import torch

    torch.set_num_threads(cfg["threads"])
    from verifier.sandbox import inputs as inp

    problem = inp.load_problem(cfg["task_source"], cfg["dtype"])
    (model,) = inp.build_models(problem, [problem.Model], cfg["init_seed"])
    for trial in inp.plan(cfg["correctness_trials"]):
        inputs = inp.inputs_for(problem, cfg["input_seed"], trial)
        numpy_inputs = [inp.to_numpy(x) if isinstance(x, torch.Tensor) else x for x in inputs]
        with torch.no_grad():
            result = model(*inputs)
        outputs = list(result) if isinstance(result, (tuple, list)) else [result]
        arrays = [inp.to_numpy(o) for o in outputs]
        write_message(out_fd, {"kind": "reference", "nonce": nonce, "index": trial.index,
                               "dtypes": [str(o.dtype).removeprefix("torch.") for o in outputs],
                               "trivial": [trivial_errors(a, numpy_inputs) for a in arrays]}, arrays)
    write_message(out_fd, {"kind": "done", "nonce": nonce})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
