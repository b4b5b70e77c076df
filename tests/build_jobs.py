"""Run one build through the monitor's real build service (the confined builder, the cache, the
policy checks), for the backend tests that check a backend's builds on their own."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from verifier.backends.base import BuildRejected
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


@dataclass(frozen=True)
class Compiled:
    """The compile gate's view of a backend's own build: ok, and what it says (the diagnostics, or
    the notes of a pass)."""
    ok: bool
    cached: bool
    seconds: float
    diagnostics: str


def compile_own(backend, source: str, cache: Path, timeout_s: float, context: dict) -> Compiled:
    """The backend's own compile job for ``source`` as the monitor runs it (a job it refuses to make,
    such as one for a missing toolchain, included)."""
    try:
        outcome = build_own(backend, source, cache, timeout_s, context=context)
    except BuildRejected as exc:
        return Compiled(False, False, 0.0, exc.reason)
    text = (outcome.note or outcome.detail) if outcome.ok else (outcome.detail or outcome.reason)
    return Compiled(outcome.ok, outcome.cached, outcome.seconds, text)
