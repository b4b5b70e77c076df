"""Run the benchmarks one after another (`make bench` / `python -m benchmarks [--quick] [NAME ...]`).

Each benchmark is its own module (``python -m benchmarks.<name>``) printing its figures; this
runner only sequences them in subprocesses so one benchmark's memory never skews the next.
``--quick`` uses smaller sizes for a smoke run; the published figures use the defaults.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from importlib.util import find_spec

QUICK_ARGS = {
    "build_speed": [],
    "verify_speed": ["--repeats", "1", "--rounds", "10"],
    "timing_floor": ["--calls", "100", "--repeats", "1", "--tasks", "L1/001_relu,L1/013_softmax"],
    "trust_cost": ["--repeats", "1"],
    "fp64_ratios": [],
    "isolation_cost": ["--repeats", "5"],
    "static_policy": ["--repeats", "2"],
    "lake_scale": ["--sizes", "10000,100000"],
    "report_scale": ["--attempts", "20000"],
    "known_good_speedups": ["--rounds", "10", "--tasks", "L1/001_relu,L1/013_softmax,L2/001_gemm_bias_relu"],
    "kernelbench_fidelity": ["--variants", "cpu", "--levels", "1"],
    "reward_noise": ["--resubmissions", "3", "--pairs", "1", "--rounds", "10"],
    "sleef_drafts": ["--repeats", "1", "--rounds", "10"],
    "triton_ascend_gate": ["--repeats", "1"],
    "memory_learning": ["--quick"],
    "bad_inputs": [],
    "first_feedback": [],
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"benchmarks to run (default: all of {', '.join(QUICK_ARGS)})")
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    args = parser.parse_args()
    failed = []
    for name in args.names or list(QUICK_ARGS):
        if find_spec(f"benchmarks.{name}") is None:
            print(f"== {name}: not found, skipped")
            continue
        cmd = [sys.executable, "-m", f"benchmarks.{name}"] + (QUICK_ARGS.get(name, []) if args.quick else [])
        print(f"== {name}: {' '.join(cmd[1:])}", flush=True)
        started = time.perf_counter()
        if subprocess.run(cmd).returncode != 0:
            failed.append(name)
        print(f"== {name}: {time.perf_counter() - started:.0f} s", flush=True)
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
