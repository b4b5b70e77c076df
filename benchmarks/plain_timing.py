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

What a harness may add around a call, one at a time, to measure what each costs (benchmarks.timing_parts):
``--copy-out`` copies every output into a shared memory file inside the timed call (as a harness that
hands outputs to another process); ``--shm-in`` gives forward inputs that view a shared memory file;
``--gap-ms X`` idles X ms between calls (the other side of a paired measurement running meanwhile: the
OpenMP threads go to sleep, the caches go cold); ``--input-sets N`` cycles through N input sets
instead of 8 (with enough of them, every call's inputs come from memory, as the verifier's fresh
input sets do).

Run: .venv/bin/python -m benchmarks.plain_timing MODE BUILD TASK_ID [--calls 400] [--threads 2]
     [--copy-out] [--shm-in] [--gap-ms 0] [--input-sets 8]   (prints one JSON object)
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


def _setup(build: str, task_id: str, mode: str, sets: int = INPUT_SETS):
    from kernelbench_npu import instantiate
    from kernelbench_npu.spec import load_build

    task = load_build(Path(build)).task(task_id)
    problem = instantiate.load_module(task.source, "problem.py")
    classes = {"ref": [problem.Model], "cand": [_candidate_class(task_id, task.source)]}.get(
        mode, [problem.Model, _candidate_class(task_id, task.source)])
    models = instantiate.build_models(problem, classes, task.dtype, 0)
    inputs = [instantiate.make_inputs(problem, task.dtype, 100 + i) for i in range(sets)]
    return models, inputs


def _shared(nbytes: int):
    """A byte tensor over a fresh shared memory file (what the verifier's arenas are)."""
    import mmap
    import os

    import torch

    fd = os.memfd_create("plain-timing")
    os.ftruncate(fd, max(nbytes, mmap.PAGESIZE))
    return torch.frombuffer(mmap.mmap(fd, max(nbytes, mmap.PAGESIZE)), dtype=torch.uint8)


def _on_shared(inputs: list) -> list:
    """Each input set's tensors copied into shared memory and handed over as views of it."""
    out = []
    for one in inputs:
        placed = []
        for x in one:
            if hasattr(x, "untyped_storage") and x.is_contiguous():
                base = _shared(x.numel() * x.element_size())
                view = base[:x.numel() * x.element_size()].view(x.dtype).view(x.shape)
                view.copy_(x)
                placed.append(view)
            else:
                placed.append(x)
        out.append(placed)
    return out


def solo(model, inputs: list, calls: int, copy_out: bool = False, gap_ms: float = 0.0, keep_out: int = 0) -> float:
    import torch

    sink = None
    times = []
    kept: list = []
    with torch.no_grad():
        for _ in range(3):
            for x in inputs:
                model(*x)
        for i in range(calls):
            x = inputs[i % len(inputs)]
            if gap_ms:
                time.sleep(gap_ms / 1e3)
            start = time.perf_counter_ns()
            out = model(*x)
            if copy_out:
                outs = out if isinstance(out, (tuple, list)) else [out]
                if sink is None:
                    sink = _shared(sum(o.numel() * o.element_size() for o in outs) + 64 * len(outs))
                offset = 0
                for o in outs:
                    n = o.numel() * o.element_size()
                    sink[offset:offset + n].view(o.dtype).view(o.shape).copy_(o)
                    offset += n + 64 - n % 64
            times.append(time.perf_counter_ns() - start)
            if keep_out:  # the last outputs kept alive, as a verifier's window keeps its calls' outputs
                kept = [*kept[-(keep_out - 1):], out] if keep_out > 1 else [out]
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
    parser.add_argument("--copy-out", action="store_true", help="copy outputs into shared memory, timed")
    parser.add_argument("--shm-in", action="store_true", help="inputs that view shared memory")
    parser.add_argument("--gap-ms", type=float, default=0.0, help="idle between calls")
    parser.add_argument("--keep-out", type=int, default=0,
                        help="outputs kept alive (the last N calls'), as a timed window keeps its calls' outputs")
    parser.add_argument("--input-sets", type=int, default=INPUT_SETS,
                        help="distinct input sets cycled through (more than the caches hold: every call's inputs cold)")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    models, inputs = _setup(args.build, args.task_id, args.mode, args.input_sets)
    if args.shm_in:
        inputs = _on_shared(inputs)
    if args.mode == "alt":
        out = {"ratio": alternating(models[0], models[1], inputs, args.calls)}
    else:
        out = {"ms": solo(models[0], inputs, args.calls, args.copy_out, args.gap_ms, args.keep_out)}
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    main()
