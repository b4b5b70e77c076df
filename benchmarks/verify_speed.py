"""Verifier speed: seconds per candidate split by gate on bundled level-1 tasks
(kernelbench_npu/problems/level1: relu, leaky_relu, softmax, sizes divided by 4 as a CPU size
profile would), as a campaign meets them: the first verification of a process (no booted spare: the
runner and the reference worker start, torch is imported, the build is cold) and the ones after it
(spares booted while the previous verification ran: verifier.monitor.pool; the build cached), plus
the compile time of the fast loader, and where the latency gate's seconds went (verifier.result.LatencyTime:
the timed windows, drawing the inputs, staging them (writing each side's inputs, reading its outputs, its Stage
commands, settling it), checking outputs, waiting for spares). The timing
floor and the A/A noise floor: benchmarks.timing_floor.

``--gap-s S`` waits S seconds between verifications, as a campaign's LLM call does: spares still booting
when a latency phase begins are stopped until it ends (verifier.monitor.pool.paused), so back to back
(no gap) the next verification waits for its runner at its start, and with a gap it does not. From the
third verification of a task on, its reference worker was primed with that verification's trials when
the one before ended (verifier.monitor.pool): "second" is the verification that reused the worker as it
was, "primed" the median of those that found it primed. ``--scale 1`` verifies at the bundled sizes,
where the reference's trials cost seconds (the default, 4, divides the batch and dim by 4).
``--torch-draw`` draws the timed calls' inputs with torch's generator instead of the native fill
(verifier.sandbox.fast_fill; ``EVOKERNEL_TORCH_DRAW=1``) and its 60 ms budget a round, as before the
fill existed: the two runs side by side show what the fill changes.

Run: .venv/bin/python -m benchmarks.verify_speed [--repeats 3] [--rounds 30] [--gap-s 0] [--scale 4] [--torch-draw]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import statistics
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from kernelbench_npu.spec import TaskSpec
from verifier import cpu_native
from verifier.api import verify
from verifier.sandbox import fast_fill
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
TORCH_DRAW_MS = 60.0  # draw_ms_per_round before the native fill (--torch-draw)


def bundled_task(name: str, scale: int = SCALE) -> TaskSpec:
    source = (PROBLEMS / f"{name}.py").read_text()
    source = re.sub(r"^(batch_size|dim) = (\d+)$", lambda m: f"{m.group(1)} = {max(1, int(m.group(2)) // scale)}",
                    source, flags=re.M)
    return TaskSpec(task_id=f"L1/{name}", level=1, category="bench", name=name, variant="cpu", dtype="float32",
                    source=source, source_sha256=hashlib.sha256(source.encode()).hexdigest(), atol=1e-4, rtol=1e-4,
                    original_shapes="{}", adapted_shapes="{}", lint_status="ok", lint_reason=None,
                    reference_ms=None, problem_path=PROBLEMS / f"{name}.py")


def per_gate(verdict) -> dict[str, float]:
    return {g.name: g.seconds for g in verdict.gates}


def bench_verify(repeats: int, rounds: int, gap_s: float = 0.0, scale: int = SCALE, torch_draw: bool = False) -> dict:
    """Per task: a fresh process verifies the candidate ``repeats + 1`` times in a row (as a campaign
    does); "first" is the first verification, "next" the median of the others."""
    import subprocess
    import sys

    out = {}
    for name in CASES:
        env = {**os.environ, fast_fill.OFF_ENV: "1" if torch_draw else ""}
        proc = subprocess.run([sys.executable, "-m", "benchmarks.verify_speed", "--one", name, "--repeats", str(repeats),
                               "--rounds", str(rounds), "--gap-s", str(gap_s), "--scale", str(scale)],
                              capture_output=True, text=True, timeout=3600, env=env)
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr[-2000:])
        out[name] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def _one(name: str, repeats: int, rounds: int, gap_s: float = 0.0, scale: int = SCALE) -> dict:
    task, candidate = bundled_task(name, scale), CASES[name]
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        settings = VerifySettings(cache_dir=Path(cache), latency_rounds=rounds)
        if os.environ.get(fast_fill.OFF_ENV):  # as before the fill: torch's generator with its 60 ms a round
            settings = settings.with_(draw_ms_per_round=TORCH_DRAW_MS)
        for i in range(repeats + 1):
            if i:
                time.sleep(gap_s)  # a campaign's LLM call between two verifications
            start = time.perf_counter()
            verdict = verify(task, candidate, "cpu", settings)
            total = time.perf_counter() - start
            assert verdict.passed, verdict.feedback
            spent = asdict(verdict.latency.time) if verdict.latency.time else {}
            rows.append({"total": total, **per_gate(verdict), "build": verdict.facts.compile_s,
                         "primed": float(verdict.facts.reference_primed),
                         "speedup": verdict.latency.speedup, "calls": float(verdict.latency.calls_per_window),
                         "counted": float(verdict.latency.rounds), "retimed": float(verdict.latency.rounds_retimed),
                         "ci": (verdict.latency.ci_high / verdict.latency.ci_low) ** 0.5 - 1,
                         **{f"latency {k[:-2]}": v for k, v in spent.items() if k.endswith("_s")},
                         "played": float(spent.get("rounds_played", 0))})
    first, rest = rows[0], rows[1:]
    median = lambda group: {k: statistics.median(r[k] for r in group) for k in group[0]}  # noqa: E731
    out = {"first": first, "next": median(rest), "second": rest[0]}
    primed = [r for r in rest if r["primed"]]
    if primed:
        out["primed"] = median(primed)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=VerifySettings().latency_rounds)
    parser.add_argument("--gap-s", type=float, default=0.0, help="seconds between verifications (an LLM call)")
    parser.add_argument("--scale", type=int, default=SCALE, help="divide the bundled batch and dim by this (1: as bundled)")
    parser.add_argument("--torch-draw", action="store_true", help="draw timed inputs with torch's generator (as before the fill)")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # one task's sequence, in its own process
    args = parser.parse_args()
    if args.one:
        print(json.dumps(_one(args.one, args.repeats, args.rounds, args.gap_s, args.scale)))
        return
    print("note: timings on a shared, loaded 2-core machine are noisy")
    compile_s = bench_compile(args.repeats)
    print("fast-loader compile (s, median):", json.dumps({k: round(v, 3) for k, v in compile_s.items()}))
    verify_s = bench_verify(args.repeats, args.rounds, args.gap_s, args.scale, args.torch_draw)
    drawn = "torch's generator" if args.torch_draw else "the native fill"
    print(f"verify seconds per candidate (sizes / {args.scale}; timed inputs drawn with {drawn}; {args.rounds} latency rounds; 'next': median of "
          f"{args.repeats} verifications after the first, in the same process, {args.gap_s:g} s apart; 'second': "
          f"the first of them, 'primed': those whose reference worker was primed):")
    for name, modes in verify_s.items():
        for mode, row in modes.items():
            gates = " ".join(f"{k}={v:.2f}" for k, v in row.items()
                             if k not in ("total", "speedup", "build", "primed", "calls", "counted", "played", "retimed", "ci")
                             and not k.startswith("latency "))
            gates += f"; of which the build itself {row['build']:.2f} s"
            print(f"  {name:16s} {mode:6s}: total {row['total']:.2f} s ({gates}); speedup {row['speedup']:.2f}x, "
                  f"{row['calls']:.0f} calls a window, {row['played']:.0f} rounds played of which {row['counted']:.0f} counted and "
                  f"{row['retimed']:.0f} retimed, CI +-{row['ci'] * 100:.1f}%")
            spent = {k[8:]: v for k, v in row.items() if k.startswith("latency ")}
            parts = ("inputs", "outputs", "stage", "settle")  # what the staging went on
            split = ", ".join(f"{k} {v:.2f}" + (f" (writing inputs {spent['inputs']:.2f}, reading outputs "
                                                  f"{spent['outputs']:.2f}, Stage {spent['stage']:.2f}, settling "
                                                  f"{spent['settle']:.2f})" if k == "staging" else "")
                              for k, v in spent.items() if k not in parts)
            print(f"  {'':16s} {'':6s}  latency gate: {split} s")
    nexts = [modes["next"]["total"] for modes in verify_s.values()]
    print(f"median seconds per verification after the first: {statistics.median(nexts):.2f}")


if __name__ == "__main__":
    main()
