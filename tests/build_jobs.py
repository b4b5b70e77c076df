"""Run one build through the monitor's real build service (the confined builder, the cache, the
policy checks), for the backend tests that check a backend's builds on their own."""

from __future__ import annotations

from pathlib import Path

from verifier.monitor.builds import BuildLimits, BuildOutcome, BuildService


def service(backend, cache: Path, dtype: str = "float32", context: dict | None = None) -> BuildService:
    libs = Path(cache) / "libs"
    libs.mkdir(parents=True, exist_ok=True)
    return BuildService(backend, context or {}, Path(cache), libs, BuildLimits(2, 6144, 256, dtype, ()))


def build_own(backend, source: str, cache: Path, timeout_s: float = 300.0, context: dict | None = None) -> BuildOutcome:
    """The backend's own compile job for ``source`` (triton's AOT compile)."""
    (job,) = backend.compile_jobs(source, context or {})
    return service(backend, cache, context=context).build(job, timeout_s)


def build_call(backend, loader: str, args: dict, cache: Path, timeout_s: float = 900.0,
               context: dict | None = None) -> BuildOutcome:
    """A loader call as the runner would record it."""
    return service(backend, cache, context=context).run(loader, args, timeout_s)
