"""The monitor's build service: a loader call the runner recorded becomes a checked library the
runner may load, or a failed gate.

For each BuildRequest (its actual sources and flags, as data): the backend turns it into a build job
(verifier.backends.base.BuildJob: arguments validated, flags filtered, keyed by what will be built);
the static policy reads the source's tokens; the job runs in a confined builder that never loads what
it builds (verifier.monitor.sites.BuilderSite), or comes from the monitor's own cache
(verifier.monitor.build_cache); the monitor checks what was built itself (preprocessed text, included
files, the library's undefined symbols: verifier.gates.hack_build) and places the library in the
runner's ``libs`` directory, which only the monitor writes. Every finding is the monitor's; nothing a
sandbox process said is taken for one.
"""

from __future__ import annotations

import functools
import json
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path

from verifier.backends.base import Backend, BuildJob, BuildRejected, BuiltUnit, ToolchainMissing
from verifier.gate_plan import quoted
from verifier.gates.hack_build import check_units
from verifier.gates.hack_native import run_native_checks
from verifier.gates.hack_python import Finding
from verifier.monitor.build_cache import BuildCache, read_regular
from verifier.monitor.sites import BuilderSite
from verifier.sandbox import hidden_paths, native_build
from verifier.sandbox import isolation
from verifier.sandbox.observer import own_namespaces

UNITS = "units.json"
MAX_LOG = 1 << 20


@dataclass(frozen=True)
class BuildOutcome:
    ok: bool
    gate: str = ""  # on failure: "compile", "hack" or "machine" (a toolchain this machine lacks: never the candidate's)
    reason: str = ""
    detail: str = ""
    note: str = ""
    cached: bool = False
    seconds: float = 0.0
    path: str = ""  # the directory the runner loads the library from
    namespaces: tuple[str, ...] = ()  # operator namespaces its sources define (verifier.sandbox.observer.own_namespaces)


@dataclass(frozen=True)
class BuildLimits:
    threads: int
    memory_mb: int
    file_mb: int
    dtype: str
    disabled: tuple[str, ...]


def _units_json(units: tuple[BuiltUnit, ...], note: str) -> bytes:
    return json.dumps({"note": note, "units": [{"label": u.label, "preprocessed": u.preprocessed,
                                                "includes": list(u.includes), "line_offset": u.line_offset,
                                                "strict_symbols": u.strict_symbols, "loader": u.loader,
                                                "language": u.language} for u in units]}).encode()


def _units_from(raw: bytes, library: Path | None) -> tuple[tuple[BuiltUnit, ...], str]:
    data = json.loads(raw)
    binaries = (str(library),) if library is not None else ()
    return tuple(BuiltUnit(u["label"], u["preprocessed"], tuple(u["includes"]), binaries, int(u["line_offset"]),
                           bool(u["strict_symbols"]), str(u.get("loader", "")), str(u.get("language", "")))
                 for u in data["units"]), str(data.get("note", ""))


def _findings(findings: list[Finding], limit: int = 5) -> tuple[str, str]:
    lines = [f.line_text() for f in findings[:limit]] + ([f"... and {len(findings) - limit} more"]
                                                          if len(findings) > limit else [])
    return f"static policy: {lines[0]}"[:300], "\n".join(lines)


def _loader_name(loader: str) -> str:
    """The loader a runner's BuildRequest names, as the reason may say it (the runner's text is data)."""
    return loader if loader.isidentifier() and len(loader) <= 40 else "a loader"


class BuildService:
    def __init__(self, backend: Backend, context: dict[str, str], cache_root: Path, libs: Path | None,
                 limits: BuildLimits) -> None:
        self.backend, self.context, self.cache, self.libs, self.limits = backend, context, BuildCache(cache_root), libs, limits
        self.cache_root = Path(cache_root)

    @functools.cached_property
    def hidden_paths_library(self) -> Path | None:
        """The compilers' preload that shows a forbidden path as a missing one (built once per machine)."""
        return hidden_paths.library(native_build.machine_root(self.cache_root))

    def run(self, loader: str, args: dict, timeout_s: float) -> BuildOutcome:
        start = time.perf_counter()
        try:
            job = self.backend.build_job(loader, args, self.context)
        except BuildRejected as exc:  # headers or a toolchain this machine lacks: the machine's, said as is
            machine = exc.gate == "machine" or exc.machine  # the monitor's own finding, never the text's
            reason = exc.reason if machine else quoted(f"{_loader_name(loader)}: {exc.reason}")
            return BuildOutcome(False, "machine" if machine else exc.gate, reason[:300], exc.reason)
        return self.build(job, timeout_s, start)

    def build(self, job: BuildJob, timeout_s: float, start: float | None = None) -> BuildOutcome:
        start = time.perf_counter() if start is None else start
        findings = [f for text, language in job.sources if text.strip()
                    for f in run_native_checks(text, self.limits.dtype, self.limits.disabled, language)]
        if findings:
            reason, detail = _findings([Finding(f.check, f"{job.label}: {f.message}", f.line) for f in findings])
            return BuildOutcome(False, "hack", reason, detail, seconds=time.perf_counter() - start)
        cached = self.cache.get(job.key)
        was_cached = cached is not None
        if not was_cached:
            with self.cache.building(job.key, timeout_s):  # the same build in progress elsewhere: wait, then read it
                cached = self.cache.get(job.key)
                was_cached = cached is not None
                if not was_cached:
                    cached = self._build_or_fail(job, timeout_s, start)
                    if isinstance(cached, BuildOutcome):
                        return cached
        outcome = self._check_and_place(job, cached, was_cached, start)
        return replace(outcome, namespaces=own_namespaces([text for text, _ in job.sources])) if outcome.ok else outcome

    def _build_or_fail(self, job: BuildJob, timeout_s: float, start: float) -> dict[str, bytes] | BuildOutcome:
        try:
            return self._build(job, timeout_s)
        except ToolchainMissing as exc:  # gone while it built (the backend's judge needs it)
            return BuildOutcome(False, "machine", exc.reason[:300], exc.reason, seconds=time.perf_counter() - start)

    def _build(self, job: BuildJob, timeout_s: float) -> dict[str, bytes] | BuildOutcome:
        site = BuilderSite()
        try:
            for rel, text in job.files:
                target = site.work / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text)
            limits = self.limits
            env = {**hidden_paths.preload_env(self.hidden_paths_library, site.work), **dict(job.env)}
            process = site.start(job.argv, job.python, (*self.backend.sandbox_paths(), *job.toolchains),
                                 limits.threads, limits.memory_mb, limits.file_mb, env)
            code = process.wait(timeout_s)
            output = process.log_text(MAX_LOG).replace(f"{site.work}/", "")  # no private paths in feedback
            if code is None:
                process.kill()
                return BuildOutcome(False, "compile", f"compile timed out after {timeout_s:.0f} s",
                                    output[-2000:])
            records = {rel: read_regular(site.work / rel) or b"" for rel in job.records}
            artifact = read_regular(site.work / job.artifact) if job.artifact else b""
            ok, text = self.backend.judge_build(job, code, output, records, self.context)
            if not ok or artifact is None:  # the compiler's text on the candidate's source: never the machine's outcome
                detail = text or f"the build produced no {job.artifact}"
                first = (detail.splitlines() or [f"build failed ({code})"])[0]
                return BuildOutcome(False, "compile", quoted(first)[:300], detail)
            library = site.work / job.artifact if job.artifact else None
            units = self.backend.built_units(job, records, library)
            note = "; ".join(n for n in (job.note, text) if n)
            contents = {UNITS: _units_json(units, note)}
            if job.artifact:
                contents[Path(job.artifact).name] = artifact
            self.cache.put(job.key, contents)
            return contents
        finally:
            site.close()

    def _check_and_place(self, job: BuildJob, contents: dict[str, bytes], cached: bool, start: float) -> BuildOutcome:
        name = Path(job.artifact).name if job.artifact else ""
        place = self.libs / job.key if self.libs is not None and name else None
        library = None
        if place is not None:
            place.mkdir(mode=0o755, exist_ok=True)
            library = place / name
            library.write_bytes(contents[name])
            os.chmod(library, 0o644)
        units, note = _units_from(contents[UNITS], library)
        roots = (*isolation.SYSTEM_READ_EXEC, *isolation.runtime_read_exec(self.backend.sandbox_paths()))
        findings = check_units(units, roots, self.limits.disabled)
        seconds = time.perf_counter() - start
        if findings:
            if library is not None:
                library.unlink()
            reason, detail = _findings(findings)
            return BuildOutcome(False, "hack", reason, detail, seconds=seconds)
        return BuildOutcome(True, note=note, cached=cached, seconds=seconds, path=str(place or ""))
