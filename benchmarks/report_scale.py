"""Report scale benchmark: the run time of the report on a synthetic lake of 100k attempts.

    .venv/bin/python -m benchmarks.report_scale [--attempts 100000] [--campaigns 4] [--no-flow]

The lake holds ``--campaigns`` campaigns over 1000 tasks each, 5 retrievals and 5 value updates
per attempt, appended in 20 batches (20 Parquet files per table). Prints the time of each phase
(metric SQL, Great Expectations suite, figures) measured separately, the end-to-end
``write_report`` time, and the `report` Prefect flow's time (ephemeral server start included) unless
``--no-flow``. Timings on a shared machine are noisy.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from memory_lake import Lake

TASKS_PER_CAMPAIGN = 1000
CATEGORIES = ("activation", "matmul", "reduction", "normalization", "convolution", "pooling", "fusion", "loss")
METHODS = ("evokernel", "pass-at-k", "refinement", "heuristic")
N_ITEMS = 2000
BATCHES = 20


def _attempts(rng: np.random.Generator, n: int, campaigns: int, budget: int) -> pa.Table:
    per_campaign = n // campaigns
    campaign = np.repeat(np.arange(campaigns), per_campaign)
    index = np.tile(np.arange(per_campaign), campaigns)
    task = index % TASKS_PER_CAMPAIGN
    iteration = (index // TASKS_PER_CAMPAIGN).astype(np.int32)
    hack = rng.random(len(index)) > 0.05
    comp = hack & (rng.random(len(index)) > 0.25 - 0.05 * campaign)
    correct = comp & (rng.random(len(index)) > 0.35)
    speedup = np.where(correct, np.exp(rng.normal(0.1 + 0.1 * campaign, 0.6, len(index))), np.nan)
    cand = np.where(correct, rng.uniform(0.5, 5.0, len(index)), np.nan)
    ids = [f"c{c}-t{t}-{i}" for c, t, i in zip(campaign, task, iteration)]
    reward = np.where(correct, np.tanh(rng.normal(0, 0.5, len(index))), -1.0)
    return pa.table({
        "attempt_id": ids,
        "campaign_id": [f"c{c}" for c in campaign],
        "task_id": [f"t{t}" for t in task],
        "level": pa.array((task % 3 + 1).astype(np.int32)),
        "category": [CATEGORIES[t % len(CATEGORIES)] for t in task],
        "stage": pa.array(np.where(iteration < 3, 1, 2).astype(np.int8)),
        "iteration": pa.array(iteration),
        "hack_passed": hack, "compile_passed": comp, "correct": correct, "feasible": correct,
        "latency_passed": correct,
        "candidate_ms": pa.array(cand, from_pandas=True),
        "reference_ms": pa.array(cand * speedup, from_pandas=True),
        "speedup": pa.array(speedup, from_pandas=True),
        "ci_low": pa.array(speedup * 0.9, from_pandas=True),
        "ci_high": pa.array(speedup * 1.1, from_pandas=True),
        "reward": reward,
        "input_tokens": rng.integers(1000, 4000, len(index)),
        "output_tokens": rng.integers(200, 2000, len(index)),
        "cost_usd": rng.uniform(0.001, 0.02, len(index)),
        "verify_seconds": rng.uniform(0.5, 5.0, len(index)),
    })


def _retrievals_and_updates(rng: np.random.Generator, attempts: pa.Table) -> tuple[pa.Table, pa.Table]:
    ids = np.repeat(np.asarray(attempts["attempt_id"].to_pylist(), dtype=object), 5)
    stage = np.repeat(attempts["stage"].to_numpy(), 5)
    campaign = np.repeat(np.asarray(attempts["campaign_id"].to_pylist(), dtype=object), 5)
    item = np.minimum(rng.zipf(1.3, len(ids)), N_ITEMS) - 1
    item_ids = [f"i{k}" for k in item]
    retrievals = pa.table({"attempt_id": ids.tolist(), "item_id": item_ids, "stage": pa.array(stage),
                           "rank": pa.array(np.tile(np.arange(5, dtype=np.int32), len(ids) // 5))})
    q_after = np.tanh(rng.normal(0, 0.5, len(ids)))
    updates = pa.table({"item_id": item_ids, "stage": pa.array(stage), "attempt_id": ids.tolist(),
                        "campaign_id": campaign.tolist(), "reward": rng.uniform(-1, 1, len(ids)),
                        "alpha": np.full(len(ids), 0.3), "q_before": q_after * 0.9, "q_after": q_after,
                        "seq": np.arange(len(ids), dtype=np.int64)})
    return retrievals, updates


def build_lake(root: Path, n_attempts: int, campaigns: int, seed: int = 0) -> float:
    """Create the synthetic lake; returns seconds spent."""
    started = time.perf_counter()
    rng = np.random.default_rng(seed)
    budget = max(1, n_attempts // campaigns // TASKS_PER_CAMPAIGN)
    lake = Lake.create(root, "cpu")
    lake.append("items", [{"item_id": f"i{k}", "kind": ("api_template", "experience", "trace")[k % 3],
                           "backend": "cpu", "category": CATEGORIES[k % len(CATEGORIES)], "title": f"item {k}",
                           "body": f"synthetic memory item {k}"} for k in range(N_ITEMS)])
    lake.append("campaigns", [{"campaign_id": f"c{c}", "backend": "cpu", "model": "synthetic",
                               "method": METHODS[c % len(METHODS)], "status": "finished",
                               "settings_json": json.dumps({"budget": budget})} for c in range(campaigns)])
    attempts = _attempts(rng, n_attempts, campaigns, budget)
    retrievals, updates = _retrievals_and_updates(rng, attempts)
    for table, data in (("attempts", attempts), ("retrievals", retrievals), ("value_updates", updates)):
        step = -(-data.num_rows // BATCHES)
        for start in range(0, data.num_rows, step):
            lake.append(table, data.slice(start, step))
    lake.close()
    return time.perf_counter() - started


def time_phases(root: Path) -> dict[str, float]:
    """Each phase of the report on its own connection, in order."""
    from reports.inventory import inspect_lake
    from reports.metrics import compute_metrics
    from reports.plots import all_figures
    from reports.quality import check_lake_quality

    con = Lake.open(root).connect()
    timings = {}
    started = time.perf_counter()
    inspect_lake(con)
    metrics = compute_metrics(con)
    timings["metric SQL"] = time.perf_counter() - started
    started = time.perf_counter()
    quality = check_lake_quality(con, metrics.campaign_ids)
    timings["GX suite (incl. import)"] = time.perf_counter() - started
    started = time.perf_counter()
    all_figures(metrics)
    timings["figures"] = time.perf_counter() - started
    con.close()
    assert quality.passed, [o.description for o in quality.failed] or quality.error
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=100_000)
    parser.add_argument("--campaigns", type=int, default=4)
    parser.add_argument("--no-flow", action="store_true", help="skip the Prefect flow measurement")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="report-scale-"))
    try:
        lake = workdir / "lake"
        print(f"building a lake of {args.attempts:,} attempts ({args.campaigns} campaigns, "
              f"{5 * args.attempts:,} retrievals and value updates)...")
        print(f"  built in {build_lake(lake, args.attempts, args.campaigns):.1f} s")
        for phase, seconds in time_phases(lake).items():
            print(f"  phase {phase:<24} {seconds:6.2f} s")
        from reports.build import write_report

        result = write_report(lake, workdir / "out")
        size = result.html_path.stat().st_size / 1e6
        print(f"write_report end to end: {result.seconds:.2f} s (index.html {size:.1f} MB, "
              f"data quality {'passed' if result.expectations_passed else 'FAILED'})")
        if not args.no_flow:
            print(f"report flow (ephemeral Prefect server start included): {_time_flow(lake, workdir):.2f} s")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _time_flow(lake: Path, workdir: Path) -> float:
    import os

    os.environ.setdefault("PREFECT_HOME", str(workdir / "prefect"))
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    started = time.perf_counter()
    from flows.report import report

    report(lake=str(lake), out=str(workdir / "flow-out"))
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
