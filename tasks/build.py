"""Prefect tasks of the `build_benchmark` flow: plan, lint, publish (kernelbench_npu does the work).

Plan and lint are cached by the build's input hash (sources, variant, levels, builder version), so
a rerun with the same inputs skips loading, adapting and linting; publish always writes (cheap) so
a deleted or moved build directory is recreated.
"""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from kernelbench_npu.build import BuildSummary, lint_plan, pool_shape, publish_build
from kernelbench_npu.lint import LintResult
from kernelbench_npu.plan import BuildPlan, build_hash, plan_build, source_dirs
from kernelbench_npu.variants import variant_for
from tasks.defaults import BUILD_TASK

_CACHED = dict(BUILD_TASK, persist_result=True)
_UNCACHED = dict(BUILD_TASK, cache_policy=NO_CACHE, persist_result=False)


def plan_cache_key(_context, parameters: dict) -> str:
    """The build hash, computed from file bytes only (no problem is executed)."""
    variant = variant_for(parameters["backend"], parameters.get("dtypes"))
    dirs = source_dirs([Path(s) for s in parameters.get("sources") or ()], parameters.get("include_bundled", True))
    levels = tuple(sorted(set(int(x) for x in parameters.get("levels") or (1, 2, 3))))
    return f"build-plan-{build_hash(variant, dirs, levels)}"


def lint_cache_key(_context, parameters: dict) -> str:
    return f"build-lint-{parameters['plan'].build_hash}"


@task(name="plan-build", cache_key_fn=plan_cache_key, **_CACHED)
def plan_benchmark(backend: str, sources: list[str], levels: list[int], include_bundled: bool = True,
                   dtypes: list[str] | None = None) -> BuildPlan:
    variant = variant_for(backend, dtypes)
    return plan_build(variant, [Path(s) for s in sources], levels, include_bundled, *pool_shape())


@task(name="lint-build", cache_key_fn=lint_cache_key, **_CACHED)
def lint_benchmark(plan: BuildPlan, workers: int | None = None) -> dict[str, LintResult]:
    return lint_plan(plan, None, workers)


@task(name="publish-build", **_UNCACHED)
def publish_benchmark(plan: BuildPlan, results: dict[str, LintResult], out: str) -> BuildSummary:
    return publish_build(plan, results, Path(out))
