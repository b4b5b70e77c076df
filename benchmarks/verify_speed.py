"""Verifier speed: seconds per candidate split by gate, cold and warm compile cache, on bundled
level-1 tasks (kernelbench_npu/problems/level1: relu, leaky_relu, softmax, sizes divided by 4 as
a CPU size profile would), plus the compile time of the fast loader and an A/A run (reference
against itself, same interleaved procedure as the latency gate) giving the speedup noise floor.

Run: .venv/bin/python -m benchmarks.verify_speed [--repeats 3] [--rounds 30]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import statistics
import tempfile
import time
from pathlib import Path

from kernelbench_npu.spec import TaskSpec
from verifier import cpu_native
from verifier.api import verify
from verifier.settings import VerifySettings

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ROOT / "kernelbench_npu" / "problems" / "level1"
FIXTURES = ROOT / "tests" / "fixtures" / "kernels"
LEAKY = '''import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r"""
extern "C" void leaky(const float* x, float* y, long n) {
    #pragma omp parallel for simd
    for (long i = 0; i < n; ++i) y[i] = x[i] >= 0.0f ? x[i] : 0.05f * x[i];
}
"""

lib = load_c(SOURCE, {"leaky": "const float*, float*, int64"})


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.leaky(x, y, x.numel())
        return y
'''
CASES = {  # bundled problem -> honest candidate
    "001_relu": (FIXTURES / "honest_relu_omp.py").read_text(),
    "002_leaky_relu": LEAKY,
    "013_softmax": (FIXTURES / "honest_softmax_stable.py").read_text(),
}
SCALE = 4


def bundled_task(name: str) -> TaskSpec:
    source = (PROBLEMS / f"{name}.py").read_text()
    source = re.sub(r"^(batch_size|dim) = (\d+)$", lambda m: f"{m.group(1)} = {max(1, int(m.group(2)) // SCALE)}",
                    source, flags=re.M)
    return TaskSpec(task_id=f"L1/{name}", level=1, category="bench", name=name, variant="cpu", dtype="float32",
                    source=source, source_sha256=hashlib.sha256(source.encode()).hexdigest(), atol=1e-4, rtol=1e-4,
                    original_shapes="{}", adapted_shapes="{}", lint_status="ok", lint_reason=None,
                    reference_ms=None, problem_path=PROBLEMS / f"{name}.py")


def per_gate(verdict) -> dict[str, float]:
    return {g.name: g.seconds for g in verdict.gates}


def bench_verify(repeats: int, rounds: int) -> dict:
    out = {}
    for name, candidate in CASES.items():
        task = bundled_task(name)
        rows = {"cold": [], "warm": []}
        for _ in range(repeats):
            with tempfile.TemporaryDirectory() as cache:
                settings = VerifySettings(cache_dir=Path(cache), latency_rounds=rounds)
                for mode in ("cold", "warm"):
                    start = time.perf_counter()
                    verdict = verify(task, candidate, "cpu", settings)
                    total = time.perf_counter() - start
                    assert verdict.passed, verdict.feedback
                    rows[mode].append({"total": total, **per_gate(verdict), "build": verdict.facts.compile_s,
                                       "speedup": verdict.latency.speedup})
        out[name] = {mode: {k: statistics.median(r[k] for r in runs) for k in runs[0]} for mode, runs in rows.items()}
    return out


def bench_compile(repeats: int) -> dict:
    sources = {"small (5 lines)": CASES["001_relu"].split('r"""')[1].split('"""')[0]}
    big = "\n".join(re.search(r'r"""(.*?)"""', (FIXTURES / f).read_text(), re.S).group(1)
                    for f in ("honest_softmax_stable.py", "honest_linear_relu.py", "honest_minmax_tuple.py",
                              "honest_sum_rows_simd.py", "honest_scale_add.py", "honest_leaky_relu.py",
                              "honest_relu_unrolled_tail.py", "honest_relu_omp.py"))
    sources[f"large ({len(big.splitlines())} lines)"] = big
    result = {}
    for label, code in sources.items():
        times = []
        for _ in range(repeats):
            with tempfile.TemporaryDirectory() as cache:
                built = cpu_native.build(code, Path(cache))
                assert built.ok, built.diagnostics
                times.append(built.seconds)
        result[label] = statistics.median(times)
    return result


def bench_aa(rounds: int, repeats: int) -> dict:
    """Reference against itself through the latency gate's own procedure (in this process)."""
    import torch

    from verifier.sandbox import inputs as inp
    from verifier.backends.cpu import CpuBackend
    from verifier.gates.latency import summarise
    from verifier.sandbox.timer import time_interleaved

    torch.set_num_threads(2)
    out = {}
    for name in CASES:
        problem = inp.load_problem(bundled_task(name).source)
        a, b = inp.build_models(problem, [problem.Model, problem.Model], 1)
        runs = []
        for rep in range(repeats):
            def fresh(i, rep=rep):
                return inp.make_inputs(problem, rep, inp.Trial(i, "check", "normal"))

            def run_a(x):
                with torch.no_grad():
                    a(*x)

            def run_b(x):
                with torch.no_grad():
                    b(*x)

            times = time_interleaved(run_a, run_b, fresh, CpuBackend().timer(), rounds, 3, 3, rep)
            result = summarise(times, 4000, 10.0)
            runs.append({"speedup": result.speedup, "ci_low": result.ci_low, "ci_high": result.ci_high,
                         "ms": result.reference_ms})
        out[name] = runs
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    print("note: timings on a shared, loaded 2-core machine are noisy")
    compile_s = bench_compile(args.repeats)
    print("fast-loader compile (s, median):", json.dumps({k: round(v, 3) for k, v in compile_s.items()}))
    verify_s = bench_verify(args.repeats, args.rounds)
    print(f"verify seconds per candidate (median of {args.repeats}, {args.rounds} latency rounds):")
    for name, modes in verify_s.items():
        for mode, row in modes.items():
            gates = " ".join(f"{k}={v:.2f}" for k, v in row.items() if k not in ("total", "speedup", "build"))
            gates += f"; of which the build itself {row['build']:.2f} s, the rest is sandbox start-up (python + torch)"
            print(f"  {name:16s} {mode}: total {row['total']:.2f} s ({gates}); speedup {row['speedup']:.2f}x")
    aa = bench_aa(args.rounds, args.repeats)
    print("A/A (reference vs itself): speedup [95% CI]")
    deviations = []
    for name, runs in aa.items():
        cells = ", ".join(f"{r['speedup']:.3f} [{r['ci_low']:.3f}-{r['ci_high']:.3f}]" for r in runs)
        print(f"  {name:16s} ({runs[0]['ms']:.2f} ms): {cells}")
        deviations += [max(r["ci_high"] - 1, 1 - r["ci_low"]) for r in runs]
    print(f"A/A noise floor (max CI deviation from 1): {max(deviations):.3f}; "
          f"median {statistics.median(deviations):.3f}")


if __name__ == "__main__":
    main()
