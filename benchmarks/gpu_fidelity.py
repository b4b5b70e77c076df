"""GPU timing fidelity: does the verifier's speedup on a GPU follow the kernel? Every known-good
solution of a GPU backend (kernelbench_npu/solutions/<backend>, Triton today) on its bundled problem at
the problem's own sizes, timed plainly and by the verifier, one row each:

- plain: reference ``Model`` and ``ModelNew`` in one fresh process on the GPU, CUDA events around each
  call, the L2 cache flushed before each call (a 256 MiB buffer zeroed, outside the events), calls in
  ABBA order on 8 input sets, the median of each side's calls: speedup = reference ms / solution ms.
  "solo" is the same process timing all reference calls, then all solution calls;
- verifier: ``verify()`` with default settings on the device (its speedup, confidence interval,
  whether it trusts it, calls per window, rounds retimed, seconds).

``verifier / plain`` is the fidelity (the CPU target, issue 34: every task 0.90-1.10). ``--repeat N``
verifies each kernel N times (largest / smallest speedup: repeatability). A GPU run needs torch with
CUDA and triton; without a GPU the benchmark says so in one line and exits 2.

Run: python -m benchmarks.gpu_fidelity [--backend triton] [--tasks L1/001_relu,...] [--repeat 1]
     [--calls 200] [--json out.json] [--cache DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PLAIN = r'''
import importlib.util, json, statistics, sys
import torch
problem, solution, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])

def module(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod

task, cand = module("task", problem), module("candidate", solution)
init = task.get_init_inputs()
torch.manual_seed(7); ref = task.Model(*init).cuda().eval()
torch.manual_seed(7); new = cand.ModelNew(*init).cuda().eval()
sets = []
for i in range(8):
    torch.manual_seed(100 + i)
    sets.append([x.cuda() if isinstance(x, torch.Tensor) else x for x in task.get_inputs()])
flush = torch.empty(64 * 2**20, dtype=torch.float32, device="cuda")
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

def once(model, inputs):
    flush.zero_()
    start.record()
    model(*inputs)
    end.record()
    end.synchronize()
    return start.elapsed_time(end)

with torch.no_grad():
    want, got = ref(*sets[0]), new(*sets[0])
    error = (want - got).abs().max().item()
    for _ in range(20):
        once(ref, sets[0]); once(new, sets[0])
    solo_ref = [once(ref, sets[i % 8]) for i in range(calls)]
    solo_new = [once(new, sets[i % 8]) for i in range(calls)]
    alt_ref, alt_new = [], []
    for i in range(calls):
        order = (ref, new) if i % 4 in (0, 3) else (new, ref)
        for model in order:
            (alt_ref if model is ref else alt_new).append(once(model, sets[i % 8]))
print(json.dumps({"solo_ref_ms": statistics.median(solo_ref), "solo_new_ms": statistics.median(solo_new),
                  "alt_ref_ms": statistics.median(alt_ref), "alt_new_ms": statistics.median(alt_new),
                  "max_abs_error": error}))
'''


def task_spec(task_id: str, backend: str):
    """The bundled problem at its own sizes, as the GPU backends verify it."""
    from kernelbench_npu.known_good import PROBLEMS_DIR
    from kernelbench_npu.spec import TaskSpec

    level, stem = task_id.split("/")
    path = PROBLEMS_DIR / f"level{level.removeprefix('L')}" / f"{stem}.py"
    source = path.read_text()
    return TaskSpec(task_id=task_id, level=int(level.removeprefix("L")), category="bundled", name=stem,
                    variant=backend, dtype="float32", source=source,
                    source_sha256=hashlib.sha256(source.encode()).hexdigest(), atol=1e-4, rtol=1e-4,
                    original_shapes="{}", adapted_shapes="{}", lint_status="ok", lint_reason=None,
                    reference_ms=None, problem_path=path)


def plain(task_id: str, solution: Path, calls: int) -> dict:
    problem = task_spec(task_id, "cuda").problem_path
    proc = subprocess.run([sys.executable, "-c", PLAIN, str(problem), str(solution), str(calls)],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["no output"])[-1][:300]}
    row = json.loads(proc.stdout.strip().splitlines()[-1])
    row["solo"] = row["solo_ref_ms"] / row["solo_new_ms"]
    row["alternating"] = row["alt_ref_ms"] / row["alt_new_ms"]
    return row


def verified(task_id: str, solution: Path, backend: str, cache: Path) -> dict:
    from verifier.api import verify
    from verifier.settings import VerifySettings

    start = time.perf_counter()
    verdict = verify(task_spec(task_id, backend), solution.read_text(), backend, VerifySettings(cache_dir=cache))
    seconds = time.perf_counter() - start
    if verdict.latency is None:
        gate = verdict.failed_gate or "infrastructure"
        reason = verdict.gate(gate).reason if verdict.gate(gate) else verdict.infrastructure_error
        return {"error": f"{gate}: {reason}"[:400], "seconds": seconds}
    lat = verdict.latency
    return {"speedup": lat.speedup, "ci": [lat.ci_low, lat.ci_high], "candidate_ms": lat.candidate_ms,
            "reference_ms": lat.reference_ms, "trusted": lat.trusted, "calls_per_window": lat.calls_per_window,
            "rounds": lat.rounds, "rounds_retimed": lat.rounds_retimed, "window_fixed_ms": lat.window_fixed_ms,
            "seconds": seconds}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="triton")
    parser.add_argument("--tasks", default="", help="comma-separated task ids (default: every known-good solution)")
    parser.add_argument("--repeat", type=int, default=1, help="verifications of each kernel")
    parser.add_argument("--calls", type=int, default=200, help="plain calls of each side")
    parser.add_argument("--json", default="")
    parser.add_argument("--cache", default="")
    args = parser.parse_args()
    try:
        import torch
        has_gpu = torch.cuda.is_available()
    except ImportError:
        has_gpu = False
    if not has_gpu:
        print("gpu_fidelity: needs an NVIDIA GPU and a CUDA build of torch (none here)")
        return 2
    from kernelbench_npu.known_good import known_good

    solutions = known_good(args.backend)
    wanted = [t for t in args.tasks.split(",") if t] or list(solutions)
    missing = [t for t in wanted if t not in solutions]
    if missing:
        print(f"gpu_fidelity: no known-good {args.backend} solution for {', '.join(missing)}")
        return 2
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(args.cache or Path(tmp) / "cache")
        print(f"{'task':28s} {'solo':>6s} {'alt':>6s} {'verifier':>9s} {'ver/alt':>8s}  ms ref/new (alt)  seconds")
        for task_id in wanted:
            row = {"task": task_id, "plain": plain(task_id, solutions[task_id], args.calls),
                   "verifier": [verified(task_id, solutions[task_id], args.backend, cache) for _ in range(args.repeat)]}
            rows.append(row)
            p, speeds = row["plain"], [v["speedup"] for v in row["verifier"] if "speedup" in v]
            if "error" in p or not speeds:
                print(f"{task_id:28s} plain: {p.get('error', 'ok')} | verifier: "
                      f"{'; '.join(v.get('error', '%.2f' % v.get('speedup', 0)) for v in row['verifier'])}", flush=True)
                continue
            med = statistics.median(speeds)
            spread = "" if len(speeds) < 2 else \
                f" (x{len(speeds)}: {min(speeds):.2f}-{max(speeds):.2f}, max/min {max(speeds) / min(speeds):.3f})"
            first = row["verifier"][0]
            print(f"{task_id:28s} {p['solo']:6.2f} {p['alternating']:6.2f} {med:9.2f} {med / p['alternating']:8.3f}  "
                  f"{p['alt_ref_ms']:.4f}/{p['alt_new_ms']:.4f}  {first['seconds']:.1f}"
                  f"  calls/window {first['calls_per_window']}, retimed {first['rounds_retimed']}, "
                  f"trusted {first['trusted']}{spread}", flush=True)
    ratios = [statistics.median(v["speedup"] for v in r["verifier"] if "speedup" in v) / r["plain"]["alternating"]
              for r in rows if "alternating" in r["plain"] and any("speedup" in v for v in r["verifier"])]
    if ratios:
        inside = sum(0.90 <= x <= 1.10 for x in ratios)
        print(f"verifier / plain (alternating): median {statistics.median(ratios):.3f}, "
              f"{inside} of {len(ratios)} within 0.90-1.10")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
