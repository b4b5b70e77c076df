"""The trusted reference worker: a separate process that never imports candidate code.

Run as ``python -m verifier.sandbox.reference_worker IN_FD OUT_FD``. Builds ``Model`` from the task source
with the verification's init seed, computes the outputs of every trial of the plan (same inputs
as the sandbox child, from the same secret seed), the errors of trivial predictors (zeros,
the output mean, an input copy) used by the scale-aware correctness check, and the float64
corrections of the precision check (verifier.sandbox.fp64_reference) for the correctness trials
(not for the perturbation probe, a near copy of trial 0, nor the post-timing and audit trials,
which only the task-dtype outputs are compared with); then the task's workload (bytes and FLOPs
of one call, verifier.sandbox.workload) for the roofline position.

References are always computed on the CPU, whatever the candidate's backend: the worker never
imports candidate or backend code, and the sandbox child copies a GPU candidate's outputs to the
CPU for the comparison (inputs are made on the CPU from the same seed, so both sides agree bit
for bit before the child places them on the device).
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from verifier.sandbox import messages as msg


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


CHECKED_IN_FLOAT64 = ("check",)  # trial kinds the float64 check reads (the perturbation probe repeats trial 0)


def _workload(model, inputs: list, workdir: str) -> msg.ReferenceWorkload | None:
    """The task's workload; None when counting fails (the verdict then has no roofline position,
    which must never cost the correctness check its reference outputs)."""
    # torch.utils.flop_counter imports torch._dynamo, whose import asks for an inductor cache dir (a new
    # temp dir unless one is named): name this worker's existing directory, since it may write nowhere
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", workdir)
    from verifier.sandbox.workload import count_workload

    try:
        work = count_workload(model, inputs)
    except Exception as exc:  # an op the dispatch counters cannot follow
        print(f"workload not counted: {type(exc).__name__}: {exc}", file=sys.stderr)
        return None
    return msg.ReferenceWorkload(work.bytes_moved, work.flops)


def main(argv: list[str]) -> int:
    in_fd, out_fd = int(argv[1]), int(argv[2])
    cfg = msg.receive(in_fd, time.monotonic() + 120, None)
    if not isinstance(cfg, msg.ReferenceConfig):
        raise SystemExit(f"expected a reference configuration, got {cfg.KIND}")
    spec = cfg.trials
    import torch

    torch.set_num_threads(spec.threads)
    from verifier.sandbox import inputs as inp

    from verifier.sandbox.fp64_reference import Fp64Model

    problem = inp.load_problem(spec.task_source, spec.dtype)
    (model,) = inp.build_models(problem, [problem.Model], spec.init_seed)
    wide = Fp64Model(model)
    for trial in inp.plan(spec.correctness_trials):
        inputs = inp.inputs_for(problem, spec.input_seed, trial)
        numpy_inputs = [inp.to_numpy(x) if isinstance(x, torch.Tensor) else x for x in inputs]
        rng_before = torch.random.get_rng_state()
        with torch.no_grad():
            result = model(*inputs)
        outputs = list(result) if isinstance(result, (tuple, list)) else [result]
        if not torch.equal(rng_before, torch.random.get_rng_state()):
            wide.disable("the reference draws random numbers in forward")
        arrays = [inp.to_numpy(o) for o in outputs]
        fp64 = wide.reference(inputs, outputs) if trial.kind in CHECKED_IN_FLOAT64 else msg.Fp64Reference()
        msg.send(out_fd, cfg.nonce, msg.ReferenceOutputs(
            trial.index, tuple(str(o.dtype).removeprefix("torch.") for o in outputs), tuple(arrays),
            tuple(trivial_errors(a, numpy_inputs) for a in arrays), fp64))
    workload = _workload(model, inp.inputs_for(problem, spec.input_seed, inp.plan(1)[0]), cfg.workdir)
    if workload is not None:
        msg.send(out_fd, cfg.nonce, workload)
    msg.send(out_fd, cfg.nonce, msg.ReferenceDone())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
