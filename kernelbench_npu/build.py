"""Reproducible benchmark builds: plan (deterministic) -> lint (measured) -> validate -> publish.

A build directory holds ``manifest.parquet``, ``problems/<task_id>.py`` (the adapted files) and
``build.json``. It is written to a temporary sibling directory and renamed into place, so a killed
build never leaves a half-written build at ``out``.

Determinism. The build hash covers the problem sources (relative path + sha256 of every scanned
file), the variant (backend, dtypes, size profile, budgets), the levels and the builder version.
``problems/`` and ``build.json`` are byte-identical for the same inputs on the same software stack.
``manifest.parquet`` is byte-identical in every column but ``reference_ms``: that column is a
measurement (median forward time on the build machine, 3 significant digits) and is deliberately
kept out of the hash and of build.json; two rebuilds give equal manifests once it is masked.
Lint outcomes do not depend on timing except for the time budget, which sits >10x above the size
profile's target so that machine noise does not flip a task.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Sequence

from kernelbench_npu.lint import LintRequest, LintResult, lint_all
from kernelbench_npu.manifest import manifest_table, write_manifest
from kernelbench_npu.plan import ADAPT_TIMEOUT_S, BUILDER_VERSION, BuildPlan, PlannedTask, plan_build
from kernelbench_npu.spec import LINT_OK, LINT_QUARANTINED
from kernelbench_npu.validate import validate_manifest
from kernelbench_npu.variants import tolerances, variant_for

Progress = Callable[[str], None]


@dataclass(frozen=True)
class LevelCounts:
    level: int
    ok: int
    quarantined: int

    @property
    def total(self) -> int:
        return self.ok + self.quarantined


@dataclass(frozen=True)
class BuildSummary:
    out: Path
    build_hash: str
    backend: str
    counts: tuple[LevelCounts, ...]  # one per level present in the build
    load_errors: tuple[str, ...]
    seconds: float

    @property
    def ok(self) -> int:
        return sum(c.ok for c in self.counts)

    @property
    def quarantined(self) -> int:
        return sum(c.quarantined for c in self.counts)


def build_benchmark(backend: str, sources: Sequence[Path] = (), levels: Sequence[int] = (1, 2, 3),
                    out: Path = Path("runs/build-cpu"), progress: Progress | None = None, *,
                    include_bundled: bool = True, dtypes: Sequence[str] | None = None,
                    workers: int | None = None, task_timeout_s: float | None = None) -> BuildSummary:
    """Build the benchmark for ``backend`` into ``out`` (replacing a previous build there).

    ``task_timeout_s`` overrides the variant's per-task limit for adapting and for linting one task."""
    started = time.perf_counter()
    say = progress or (lambda _msg: None)
    variant = variant_for(backend, tuple(dtypes) if dtypes else None)
    if task_timeout_s is not None:
        variant = replace(variant, lint_task_timeout_s=float(task_timeout_s))
    plan = plan_build(variant, sources, levels, include_bundled, *pool_shape(workers),
                      timeout_s=min(ADAPT_TIMEOUT_S, variant.lint_task_timeout_s))
    say(f"planned {len(plan.tasks)} tasks for {backend} ({len(plan.load_errors)} files skipped), hash {plan.build_hash[:12]}")
    for error in plan.load_errors:
        say(f"skipped {error}")
    results = lint_plan(plan, say, workers)
    return publish_build(plan, results, Path(out), say, started)


def lint_plan(plan: BuildPlan, progress: Progress | None = None, workers: int | None = None) -> dict[str, LintResult]:
    """Lint every task that survived planning, in a pool of worker processes."""
    variant = plan.variant
    requests = [LintRequest(t.task_id, t.adapted_source, t.dtype, variant.lint_time_budget_ms, f"problems/{t.problem_file}")
                for t in plan.tasks if t.plan_reason is None]
    workers, threads = pool_shape(workers)
    return lint_all(requests, variant.lint_task_timeout_s, workers=workers, threads=threads,
                    memory_bytes=3 * variant.lint_memory_budget_bytes + (1 << 30), progress=progress)


def pool_shape(workers: int | None = None) -> tuple[int, int]:
    """(worker processes, torch threads per worker): by default 2 workers sharing the cores."""
    cores = os.cpu_count() or 1
    workers = workers or min(2, cores)
    return workers, max(1, cores // workers)


def publish_build(plan: BuildPlan, results: dict[str, LintResult], out: Path, progress: Progress | None = None,
                  started: float | None = None) -> BuildSummary:
    """Write the build to a temp dir, validate the manifest (GX), then rename it to ``out``."""
    say = progress or (lambda _msg: None)
    started = time.perf_counter() if started is None else started
    rows = [_row(t, plan.variant.backend, results.get(t.task_id)) for t in plan.tasks]
    table = manifest_table(rows)
    validate_manifest(table)
    say("manifest validated (Great Expectations)")
    counts = _counts(rows)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        _write_problems(plan.tasks, staging / "problems")
        write_manifest(table, staging / "manifest.parquet")
        (staging / "build.json").write_text(json.dumps(_build_json(plan, counts), indent=2, sort_keys=True) + "\n")
        _replace_dir(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    summary = BuildSummary(out, plan.build_hash, plan.variant.backend, counts, plan.load_errors,
                           time.perf_counter() - started)
    for c in counts:
        say(f"level {c.level}: {c.ok} ok, {c.quarantined} quarantined")
    return summary


def _row(task: PlannedTask, backend: str, result: LintResult | None) -> dict:
    if task.plan_reason is not None or result is None:
        atol, rtol = tolerances(task.dtype, 1.0)
        status, reason, ms = LINT_QUARANTINED, task.plan_reason or "not linted", None
    else:
        atol, rtol, status, reason, ms = result.atol, result.rtol, result.status, result.reason, result.reference_ms
    cost = task.cost
    return {
        "task_id": task.task_id, "level": task.problem.level, "category": task.problem.category,
        "name": task.problem.name, "source_sha256": task.problem.source_sha256, "variant": backend,
        "dtype": task.dtype, "original_shapes": json.dumps(task.original_constants),
        "adapted_shapes": json.dumps(task.adapted_constants),
        "input_shapes": json.dumps(cost.input_shapes) if cost else None,
        "output_shape": json.dumps(cost.output_shape) if cost else None,
        "atol": atol, "rtol": rtol, "lint_status": status, "lint_reason": reason, "reference_ms": ms,
        "problem_file": task.problem_file,
        "adapted_sha256": hashlib.sha256(task.adapted_source.encode()).hexdigest(), "notes": task.notes,
    }


def _counts(rows: list[dict]) -> tuple[LevelCounts, ...]:
    levels = sorted({r["level"] for r in rows})
    return tuple(LevelCounts(lvl, sum(1 for r in rows if r["level"] == lvl and r["lint_status"] == LINT_OK),
                             sum(1 for r in rows if r["level"] == lvl and r["lint_status"] != LINT_OK))
                 for lvl in levels)


def _write_problems(tasks: Sequence[PlannedTask], root: Path) -> None:
    for task in tasks:
        path = root / task.problem_file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(task.adapted_source, encoding="utf-8")


def _build_json(plan: BuildPlan, counts: tuple[LevelCounts, ...]) -> dict:
    import pyarrow
    import torch

    return {
        "build_hash": plan.build_hash,
        "backend": plan.variant.backend,
        "builder_version": BUILDER_VERSION,
        "variant": plan.variant.as_dict(),
        "levels": list(plan.levels),
        "sources": [s.label for s in plan.sources],
        "counts": {str(c.level): {"ok": c.ok, "quarantined": c.quarantined, "total": c.total} for c in counts},
        "total": {"ok": sum(c.ok for c in counts), "quarantined": sum(c.quarantined for c in counts)},
        "load_errors": list(plan.load_errors),
        "environment": {"python": platform.python_version(), "torch": torch.__version__,
                        "pyarrow": pyarrow.__version__, "lint_pool": list(pool_shape())},
        "measured_columns": ["reference_ms"],
    }


def _replace_dir(staging: Path, out: Path) -> None:
    """Rename ``staging`` to ``out``; an existing build at ``out`` is moved aside first, then removed."""
    old = None
    if out.exists():
        old = out.parent / f".{out.name}.old-{uuid.uuid4().hex[:8]}"
        os.rename(out, old)
    os.rename(staging, out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
