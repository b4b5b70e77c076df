"""KernelBench fidelity: build a real KernelBench checkout in each variant and report what survives.

``python -m benchmarks.kernelbench_fidelity [--source DIR] [--variants cpu,ascendc] [--levels 1,2]
[--rebuild] [--out DIR] [--calibrate]``. Per variant: wall time (with the machine's load average and a speed probe,
since timings from a shared machine are noisy), ok/quarantined per level, every quarantine reason,
how tasks were linted, the share of balanced-shrink tasks (largest over smallest shrink factor of
the sizes >= 64 at most 16), and the cost model against the forward times lint measured.
``--rebuild`` builds the first variant again and compares manifest.parquet, problems/ and
build.json byte for byte. ``--calibrate`` measures the cost model's rates on this machine
instead (matmul, bandwidth, conv, transposed conv, recurrent cells). The checkout defaults to $KERNELBENCH_DIR, then /work/kernelbench/KernelBench.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import statistics
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

from kernelbench_npu.build import build_benchmark

BALANCE_LIMIT = 16.0
DEFAULT_SOURCES = (os.environ.get("KERNELBENCH_DIR", ""), "/work/kernelbench/KernelBench")


def speed_probe() -> str:
    """One-thread matmul and add throughput right now (a quiet 2-core host: ~40 GFLOP/s, ~5 GB/s)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    a, x = torch.rand(512, 512), torch.rand(1 << 22)
    best_mm, best_add = math.inf, math.inf
    for _ in range(5):
        t0 = time.perf_counter()
        a @ a
        t1 = time.perf_counter()
        x + x
        best_mm, best_add = min(best_mm, t1 - t0), min(best_add, time.perf_counter() - t1)
    torch.set_num_threads(threads)
    return f"{2 * 512 ** 3 / best_mm / 1e9:.1f} GFLOP/s matmul, {3 * x.numel() * 4 / best_add / 1e9:.1f} GB/s add"


def _best_seconds(fn, repeats: int = 7) -> float:
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def calibrate() -> None:
    """Measure the cost model's rates on this machine (best of 7, 2 threads) next to its constants."""
    import torch

    from kernelbench_npu import cost

    torch.set_num_threads(2)
    torch.set_grad_enabled(False)
    a, x = torch.rand(1024, 1024), torch.rand(1 << 24)
    image, conv = torch.rand(8, 64, 56, 56), torch.nn.Conv2d(64, 64, 3, padding=1)
    up = torch.nn.ConvTranspose2d(64, 32, 3, stride=2)
    rows = [("matmul GFLOP/s", 2 * 1024 ** 3 / _best_seconds(lambda: a @ a) / 1e9, cost.FLOPS_PER_S["matmul"] / 1e9),
            ("elementwise GB/s", 3 * x.numel() * 4 / _best_seconds(lambda: x + x) / 1e9, cost.BYTES_PER_S / 1e9),
            ("conv2d 3x3 GFLOP/s", 2 * 8 * 56 * 56 * 64 * 64 * 9 / _best_seconds(lambda: conv(image)) / 1e9,
             cost.FLOPS_PER_S["convolution"] / 1e9),
            ("conv_transpose2d GFLOP/s", 2 * 8 * 56 * 56 * 64 * 32 * 9 / _best_seconds(lambda: up(image)) / 1e9,
             cost.FLOPS_PER_S["conv_transpose"] / 1e9)]
    seq = torch.rand(128, 2, 32)
    for name, cls in (("lstm", torch.nn.LSTM), ("gru", torch.nn.GRU), ("rnn_tanh", torch.nn.RNN)):
        layer = cls(32, 32, 6, bidirectional=True)  # tiny cells: the fixed cost per cell update dominates
        rows.append((f"{name} us per cell step", _best_seconds(lambda: layer(seq)) * 1e6 / (128 * 12),
                     cost.SECONDS_PER_CELL_STEP[name] * 1e6))
    print(f"calibration ({machine()}):")
    for name, measured, model in rows:
        print(f"  {name:<26} measured {measured:8.2f}   cost model {model:8.2f}")


def machine() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f} (5 min {five:.1f}) on {os.cpu_count()} cores; probe {speed_probe()}"


def summarise(out: Path) -> dict:
    """Counts, reasons, lint modes, balance and cost-model figures of one build directory."""
    rows = pq.read_table(out / "manifest.parquet").to_pylist()
    times = {r["task_id"]: r for r in pq.read_table(out / "measurements.parquet").to_pylist()}
    levels = sorted({r["level"] for r in rows})
    counts = {lvl: {"ok": sum(r["level"] == lvl and r["lint_status"] == "ok" for r in rows),
                    "quarantined": sum(r["level"] == lvl and r["lint_status"] != "ok" for r in rows)} for lvl in levels}
    quarantined = sorted((r["task_id"], r["lint_reason"]) for r in rows if r["lint_status"] != "ok")
    balanced = [r for r in rows if r["balance"] is None or r["balance"] <= BALANCE_LIMIT]
    ratios = [times[r["task_id"]]["reference_ms"] / r["estimated_ms"] for r in rows
              if times.get(r["task_id"], {}).get("reference_ms") and r["estimated_ms"]]
    measured = [t["lint_forward_ms"] for t in times.values() if t["lint_forward_ms"] is not None]
    return {
        "counts": counts, "quarantined": quarantined,
        "lint_modes": {m: sum(r["lint_mode"] == m for r in rows) for m in sorted({r["lint_mode"] for r in rows})},
        "balanced": len(balanced), "tasks": len(rows),
        "unbalanced": sorted((r["task_id"], round(r["balance"], 1)) for r in rows if r not in balanced),
        "marked": sum(bool(r["lint_notes"]) for r in rows),
        "measured_over_estimate": _spread(ratios), "forward_ms": _spread(measured),
    }


def _spread(values: list[float]) -> dict:
    if not values:
        return {}
    ordered = sorted(values)
    return {"median": round(statistics.median(ordered), 3), "p90": round(ordered[int(0.9 * (len(ordered) - 1))], 3),
            "max": round(ordered[-1], 3), "n": len(ordered)}


def digest(root: Path, skip: tuple[str, ...] = ("measurements.parquet",)) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p.name not in skip):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def report(backend: str, seconds: float, load: str, summary: dict) -> None:
    counts = ", ".join(f"L{lvl} {c['ok']} ok / {c['quarantined']} quarantined" for lvl, c in summary["counts"].items())
    total_q = sum(c["quarantined"] for c in summary["counts"].values())
    print(f"{backend}: {seconds:.0f} s wall ({load})")
    print(f"  {counts}; {total_q}/{summary['tasks']} quarantined ({100 * total_q / max(1, summary['tasks']):.1f}%)")
    print(f"  balanced shrink (<= {BALANCE_LIMIT:g}x): {summary['balanced']}/{summary['tasks']} "
          f"({100 * summary['balanced'] / max(1, summary['tasks']):.1f}%); unbalanced: {summary['unbalanced']}")
    print(f"  lint modes: {summary['lint_modes']}; marked trivial-under-some-inputs: {summary['marked']}")
    print(f"  measured/estimated forward: {summary['measured_over_estimate']}; forward ms: {summary['forward_ms']}")
    for task_id, reason in summary["quarantined"]:
        print(f"  quarantined {task_id}: {reason}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=None, help="a KernelBench checkout")
    parser.add_argument("--variants", default="cpu,ascendc")
    parser.add_argument("--levels", default="1,2")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the first variant and compare bytes")
    parser.add_argument("--out", type=Path, default=None, help="keep the builds here (default: a temp dir)")
    parser.add_argument("--calibrate", action="store_true", help="measure the cost model's rates here, build nothing")
    args = parser.parse_args()
    if args.calibrate:
        calibrate()
        return
    source = args.source or next((Path(p) for p in DEFAULT_SOURCES if p and Path(p).is_dir()), None)
    if source is None or not source.is_dir():
        print("kernelbench_fidelity: skipped (no KernelBench checkout: pass --source or set KERNELBENCH_DIR)")
        return
    levels = tuple(int(x) for x in args.levels.split(","))
    with tempfile.TemporaryDirectory(prefix="kb-fidelity-") as tmp:
        root = args.out or Path(tmp)
        results = {}
        for i, backend in enumerate(v for v in args.variants.split(",") if v):
            load, started = machine(), time.perf_counter()
            build = build_benchmark(backend, sources=[source], levels=levels, out=root / f"build-{backend}",
                                    include_bundled=False)
            seconds = time.perf_counter() - started
            results[backend] = {"seconds": round(seconds, 1), "load_before": load, "load_after": machine(),
                                "build_hash": build.build_hash, **summarise(build.out)}
            report(backend, seconds, f"before: {load}; after: {results[backend]['load_after']}", results[backend])
            if i == 0 and args.rebuild:
                again = build_benchmark(backend, sources=[source], levels=levels, out=root / f"build-{backend}-again",
                                        include_bundled=False)
                same_manifest = (build.out / "manifest.parquet").read_bytes() == (again.out / "manifest.parquet").read_bytes()
                same_all = digest(build.out) == digest(again.out)
                results[backend]["rebuild"] = {"same_hash": build.build_hash == again.build_hash,
                                               "manifest_byte_identical": same_manifest,
                                               "build_byte_identical_without_measurements": same_all}
                print(f"  rebuild: {results[backend]['rebuild']}")
        (root / "fidelity.json").write_text(json.dumps(results, indent=2, default=str))
        print(f"figures: {root / 'fidelity.json'}")


if __name__ == "__main__":
    main()
