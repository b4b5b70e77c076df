"""Speedup of every known-good CPU solution (kernelbench_npu/solutions/cpu) over PyTorch on this
machine, measured by the verifier's own latency gate: the candidate's runner and the reference worker
timed in paired rounds of windows of many calls, median speedup with a 95% bootstrap CI. One
verification at a time (two would compete for the cores), on the bundled cpu build. Against plain
in-process timing of the same kernels: benchmarks.timing_fidelity.

Run: .venv/bin/python -m benchmarks.known_good_speedups [--rounds 30] [--tasks L1/001_relu,...]
     [--build runs/build-cpu] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import tempfile
import time
from pathlib import Path

from kernelbench_npu.known_good import known_good, solution_for
from kernelbench_npu.spec import load_build
from verifier.api import verify
from verifier.result import Verdict
from verifier.settings import VerifySettings


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (1 min) / {five:.1f} (5 min) on {os.cpu_count()} cores"


def _build_dir(given: str | None, scratch: Path) -> Path:
    if given:
        return Path(given)
    from kernelbench_npu.build import build_benchmark

    out = scratch / "build-cpu"
    print(f"building the bundled problems for the cpu backend into {out} ...", flush=True)
    build_benchmark("cpu", out=out)
    return out


def _row(task_id: str, verdict: Verdict, seconds: float) -> dict:
    row = {"task_id": task_id, "gate": verdict.failed_gate or "pass", "seconds": round(seconds, 1)}
    if verdict.latency is not None:
        lat = verdict.latency
        row.update(reference_ms=lat.reference_ms, candidate_ms=lat.candidate_ms, speedup=lat.speedup,
                   ci_low=lat.ci_low, ci_high=lat.ci_high, flagged=lat.flagged)
    elif verdict.failed_gate:
        row["reason"] = verdict.gate(verdict.failed_gate).reason
    return row


def _print_row(row: dict) -> None:
    if "speedup" in row:
        flag = "  (flagged)" if row["flagged"] else ""
        print(f"{row['task_id']:38s} {row['reference_ms']:9.3f} {row['candidate_ms']:9.3f} {row['speedup']:8.2f}x "
              f"[{row['ci_low']:.2f}-{row['ci_high']:.2f}]{flag}", flush=True)
    else:
        print(f"{row['task_id']:38s} failed at {row['gate']}: {row.get('reason', '')[:120]}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30, help="paired latency rounds per solution")
    parser.add_argument("--tasks", default="", help="comma-separated task ids (default: every solution)")
    parser.add_argument("--build", default=None, help="an existing cpu build of the bundled problems")
    parser.add_argument("--json", default=None, help="also write the rows as JSON here")
    args = parser.parse_args()
    solutions = known_good("cpu")
    wanted = [t for t in args.tasks.split(",") if t] or list(solutions)
    with tempfile.TemporaryDirectory(prefix="known-good-") as tmp:
        build = load_build(_build_dir(args.build, Path(tmp)))
        settings = VerifySettings(cache_dir=Path(tmp) / "cache", latency_rounds=args.rounds)
        print(f"start: {_load()}; {settings.threads} threads per side, {args.rounds} rounds of timed windows of at "
              f"least {settings.window_ms:g} ms")
        print(f"{'task':38s} {'torch ms':>9s} {'ours ms':>9s} {'speedup':>9s} [95% CI]")
        rows = []
        for task_id in wanted:
            start = time.perf_counter()
            task = build.task(task_id)
            verdict = verify(task, solution_for(task_id, task.source), "cpu", settings)
            rows.append(_row(task_id, verdict, time.perf_counter() - start))
            _print_row(rows[-1])
    speedups = [r["speedup"] for r in rows if "speedup" in r]
    if speedups:
        geomean = math.exp(statistics.fmean(math.log(s) for s in speedups))
        print(f"{len(speedups)} timed: geomean {geomean:.2f}x, median {statistics.median(speedups):.2f}x, "
              f"{sum(s > 1 for s in speedups)} faster than torch; end: {_load()}")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "load_end": os.getloadavg()}, indent=1))


if __name__ == "__main__":
    main()
