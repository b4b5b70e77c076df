"""Refine reward under machine load: the former raw-latency reward against the paired, noise-aware
one (evokernel.agent.rewards), on real verifications of real kernels.

Two experiments, each while a fluctuating CPU burner (``--burners`` processes, busy and idle in
random bursts of 50-500 ms) competes with the verifier for the cores:

- identical: one kernel (the bundled ReLU task, an OpenMP kernel) verified once as the incumbent,
  then resubmitted ``--resubmissions`` times; every resubmission is scored against the incumbent.
  Target: |raw reward| <= 0.15 every time.
- faster: an incumbent making three passes over the data against a new kernel making two (1.5x
  less work on a memory-bound op), ``--pairs`` times. Target: reward > 0.3 every time.

Before = tanh(log best_ms - log new_ms) on the raw latencies of the two verifications;
after = rewards.refine_reward on their paired speedups and intervals.

Run: .venv/bin/python -m benchmarks.reward_noise [--resubmissions 10] [--pairs 3] [--burners 2]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.verify_speed import bundled_task
from evokernel.agent.rewards import PairedSpeedup, refine_reward
from verifier.api import verify
from verifier.result import Verdict
from verifier.settings import VerifySettings

PASSES_KERNEL = '''import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r"""
extern "C" void relu_passes(const float* x, float* y, long n, long passes) {
    for (long p = 0; p < passes; ++p) {
        #pragma omp parallel for simd if(n >= 32768)
        for (long i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
    }
}
"""

lib = load_c(SOURCE, {"relu_passes": "const float*, float*, int64, int64"})


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.relu_passes(x, y, x.numel(), PASSES)
        return y
'''

BURNER = '''
import random, time
rng = random.Random()
while True:
    end = time.perf_counter() + rng.uniform(0.05, 0.5)
    while time.perf_counter() < end:
        pass
    time.sleep(rng.uniform(0.0, 0.5))
'''


def kernel(passes: int) -> str:
    return PASSES_KERNEL.replace("PASSES)", f"{passes})")


def raw_latency_reward(best_ms: float, new_ms: float) -> float:
    """The former refine reward: raw latencies from two different verifications."""
    return math.tanh(math.log(best_ms) - math.log(new_ms))


def paired(verdict: Verdict) -> PairedSpeedup:
    lat = verdict.latency
    return PairedSpeedup.of(lat.speedup, lat.ci_low, lat.ci_high)


def scored(incumbent: Verdict, new: Verdict) -> dict:
    a, b = incumbent.latency, new.latency
    return {"incumbent_ms": a.candidate_ms, "new_ms": b.candidate_ms,
            "incumbent_speedup": a.speedup, "new_speedup": b.speedup,
            "new_ci": [b.ci_low, b.ci_high], "reference_ms": b.reference_ms,
            "before": raw_latency_reward(a.candidate_ms, b.candidate_ms),
            "after": refine_reward(True, paired(incumbent), paired(new))}


def checked_verify(task, code: str, settings: VerifySettings) -> Verdict:
    verdict = verify(task, code, "cpu", settings)
    if not verdict.passed:
        raise SystemExit(f"verification failed: {verdict.feedback}")
    return verdict


def start_burners(count: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", BURNER]) for _ in range(count)]


def print_row(label: str, row: dict) -> None:
    print(f"  {label:<14} ms {row['incumbent_ms']:7.3f} -> {row['new_ms']:7.3f}   speedup "
          f"{row['incumbent_speedup']:5.2f} -> {row['new_speedup']:5.2f} (CI {row['new_ci'][0]:.2f}-"
          f"{row['new_ci'][1]:.2f})   r before {row['before']:+.3f}   after {row['after']:+.3f}", flush=True)


def run(resubmissions: int, pairs: int, settings: VerifySettings) -> dict:
    task = bundled_task("001_relu")
    same = kernel(2)
    incumbent = checked_verify(task, same, settings)
    identical = []
    print("identical kernel resubmitted:")
    for i in range(resubmissions):
        identical.append(scored(incumbent, checked_verify(task, same, settings)))
        print_row(f"resubmit {i + 1}", identical[-1])
    faster = []
    print("1.5x less work (3 passes -> 2 passes):")
    for i in range(pairs):
        slow = checked_verify(task, kernel(3), settings)
        faster.append(scored(slow, checked_verify(task, kernel(2), settings)))
        print_row(f"pair {i + 1}", faster[-1])
    return {"identical": identical, "faster": faster}


def summary(result: dict) -> dict:
    ident, fast = result["identical"], result["faster"]
    return {
        "identical_max_abs_before": max(abs(r["before"]) for r in ident),
        "identical_max_abs_after": max(abs(r["after"]) for r in ident),
        "faster_min_before": min(r["before"] for r in fast),
        "faster_min_after": min(r["after"] for r in fast),
        "faster_speedup_ratio_median": sorted(r["new_speedup"] / r["incumbent_speedup"] for r in fast)[len(fast) // 2],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resubmissions", type=int, default=10)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--burners", type=int, default=2, help="fluctuating busy processes (0: none)")
    parser.add_argument("--rounds", type=int, default=30, help="latency rounds per verification (campaign: 30)")
    parser.add_argument("--json", type=Path, help="also write the rows and the summary here")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as cache:
        settings = VerifySettings(cache_dir=Path(cache), latency_rounds=args.rounds)
        burners = start_burners(args.burners)
        started = time.perf_counter()
        try:
            result = run(args.resubmissions, args.pairs, settings)
        finally:
            for proc in burners:
                proc.kill()
                proc.wait()
    figures = summary(result)
    figures.update(load_avg_1min_before=load_before, load_avg_1min_after=os.getloadavg()[0], burners=args.burners,
                   seconds=time.perf_counter() - started)
    print(json.dumps(figures, indent=2))
    targets = figures["identical_max_abs_after"] <= 0.15 and figures["faster_min_after"] > 0.3
    print(f"targets (identical |r| <= 0.15, 1.5x faster r > 0.3): {'met' if targets else 'NOT met'}")
    if args.json:
        args.json.write_text(json.dumps({"summary": figures, **result}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
