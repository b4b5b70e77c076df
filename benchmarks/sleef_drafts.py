"""Vector math on the CPU backend: Sigmoid, GELU and Softmax drafts written with scalar libm calls
(what a model writes when -ffast-math is off: expf/tanhf in a loop stay scalar) against the same
drafts with SLEEF (``#include <sleef.h>``, linked by the fast loader), each verified for real on the
bundled level-1 task (sizes divided by 4, as benchmarks.verify_speed) and scored by its paired
speedup over the PyTorch reference (median over repeats; both sides timed in the same run, so load
mostly cancels). The kernels are in benchmarks/sleef_kernels/.

Run: .venv/bin/python -m benchmarks.sleef_drafts [--repeats 3] [--rounds 30] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from benchmarks.verify_speed import bundled_task
from verifier.api import verify
from verifier.cpu_native import header_available
from verifier.settings import VerifySettings

KERNELS = Path(__file__).with_name("sleef_kernels")
TASKS = {"sigmoid": "004_sigmoid", "gelu": "003_gelu", "softmax": "013_softmax"}


def speedups(op: str, variant: str, repeats: int, settings: VerifySettings) -> list[float]:
    task, code = bundled_task(TASKS[op]), (KERNELS / f"{op}_{variant}.py").read_text()
    found = []
    for _ in range(repeats):
        verdict = verify(task, code, "cpu", settings)
        if not verdict.passed:
            raise SystemExit(f"{op} {variant}: {verdict.feedback}")
        found.append(verdict.latency.speedup)
        print(f"  {op:<8} {variant:<7} speedup {found[-1]:.2f}x "
              f"(candidate {verdict.latency.candidate_ms:.3f} ms, reference {verdict.latency.reference_ms:.3f} ms)",
              flush=True)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--threads", type=int, default=2, help="verifier thread budget (1 isolates per-core math "
                        "throughput from OpenMP scheduling on a loaded machine)")
    parser.add_argument("--ops", default=",".join(TASKS), help="comma-separated subset of sigmoid,gelu,softmax")
    args = parser.parse_args()
    if not header_available("sleef.h"):
        print("SLEEF is not installed (Debian: apt-get install libsleef-dev); nothing to compare")
        return 1
    rows = {}
    with tempfile.TemporaryDirectory() as cache:
        settings = VerifySettings(cache_dir=Path(cache), latency_rounds=args.rounds, threads=args.threads)
        for op in args.ops.split(","):
            before = statistics.median(speedups(op, "scalar", args.repeats, settings))
            after = statistics.median(speedups(op, "sleef", args.repeats, settings))
            rows[op] = {"scalar_speedup": round(before, 3), "sleef_speedup": round(after, 3),
                        "gain": round(after / before, 2)}
    print(json.dumps({"ops": rows, "threads": args.threads, "load_avg_1min": os.getloadavg()[0]}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
