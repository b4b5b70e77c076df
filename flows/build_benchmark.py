"""The `build_benchmark` flow: the same build as `evokernel build`, as Prefect tasks (plan -> lint ->
publish) with plan and lint cached by the build's input hash."""

from __future__ import annotations

from prefect import flow, get_run_logger

from tasks.build import lint_benchmark, plan_benchmark, publish_benchmark


@flow(name="build_benchmark", log_prints=False)
def build_benchmark(backend: str = "cpu", sources: list[str] | None = None, levels: list[int] | None = None,
                    out: str = "runs/build-cpu", include_bundled: bool = True, dtypes: list[str] | None = None,
                    workers: int | None = None) -> dict:
    """Build a benchmark; returns the summary as a dict (out, build_hash, counts per level, seconds)."""
    logger = get_run_logger()
    plan = plan_benchmark(backend, list(sources or []), list(levels or [1, 2, 3]), include_bundled, dtypes)
    logger.info("planned %d tasks, build hash %s", len(plan.tasks), plan.build_hash)
    results = lint_benchmark(plan, workers)
    summary = publish_benchmark(plan, results, out)
    logger.info("published %s: %d ok, %d quarantined", summary.out, summary.ok, summary.quarantined)
    return {"out": str(summary.out), "build_hash": summary.build_hash, "backend": summary.backend,
            "counts": {c.level: {"ok": c.ok, "quarantined": c.quarantined} for c in summary.counts},
            "load_errors": list(summary.load_errors), "seconds": summary.seconds}


if __name__ == "__main__":  # pragma: no cover
    build_benchmark()
