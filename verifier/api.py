"""The public entry point: ``verify(task, candidate_source, backend, settings) -> Verdict``.

Order: hack (the static policy, here in the monitor) -> compile -> correctness -> latency, stopping at
the first failure. Everything after the static checks is the monitor's session
(verifier.monitor.session): a confined runner imports the candidate and calls ``forward``, a confined
reference worker computes the reference from the secret seeds, a confined builder compiles what the
runner's loader calls asked for, and the monitor decides every gate and takes every time. Never
raises for a bad candidate; failures of the machine set ``Verdict.infrastructure_error``.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import replace

from kernelbench_npu.spec import TaskSpec
from verifier.backends import get_backend
from verifier.feedback import format_feedback
from verifier.gate_plan import plan_gates, quoted
from verifier.gates.hack import static_gate
from verifier.machine_peaks import machine_peaks
from verifier.monitor.session import Candidate, InfrastructureError, Session
from verifier.result import GateResult, SessionFacts, Verdict
from verifier.sandbox import observer
from verifier.seeds import new_master_seed
from verifier.settings import VerifySettings


def verify(task: TaskSpec, candidate_source: str, backend: str = "cpu",
           settings: VerifySettings | None = None) -> Verdict:
    settings = settings or VerifySettings()
    started = time.perf_counter()
    code_sha = hashlib.sha256(candidate_source.encode(errors="surrogatepass")).hexdigest()
    try:
        backend_impl = get_backend(backend)
        availability = backend_impl.availability()
    except Exception as exc:  # unknown backend, import failure of an optional backend
        return _finish(started, Verdict(task.task_id, backend, code_sha, (),
                                        infrastructure_error=f"backend {backend!r}: {exc}"))
    plan = plan_gates(availability)
    if not plan.substantive:  # nothing beyond the static checks could run: say why, never a verdict
        return _finish(started, Verdict(task.task_id, backend, code_sha, (),
                                        infrastructure_error=f"backend {backend} unavailable: {availability.reason}"))
    hack = static_gate(candidate_source, task.dtype, settings.disabled_checks, backend_impl.static_imports)
    if not hack.passed:
        return _finish(started, Verdict(task.task_id, backend, code_sha, (hack,)))
    plan = plan_gates(backend_impl.availability_for(candidate_source, availability))
    start = time.perf_counter()
    problem = backend_impl.precheck(candidate_source)
    if problem:
        gate = GateResult("compile", False, quoted(problem.splitlines()[0])[:300], time.perf_counter() - start,
                          detail=problem)
        return _finish(started, Verdict(task.task_id, backend, code_sha, (hack, gate)))
    seed = settings.seed if settings.seed is not None else new_master_seed()
    peaks = machine_peaks(backend, settings.threads).peaks if plan.runs("latency") else None
    library, _why = observer.library(settings.cache_dir) if plan.runs("correctness") else (None, "")
    candidate = Candidate(task, candidate_source, backend_impl, backend_impl.compile_context(task),
                          backend_impl.correctness_task_source(task.source), backend)
    session = Session(candidate, settings, plan, seed, peaks, str(library or ""))
    try:
        result = session.run(hack)
    except (InfrastructureError, OSError) as exc:
        return _finish(started, Verdict(task.task_id, backend, code_sha, (hack,), infrastructure_error=str(exc),
                                        facts=SessionFacts(seed=seed)))
    return _finish(started, Verdict(task.task_id, backend, code_sha, result.gates, result.latency,
                                    facts=result.facts, warnings=result.warnings))


def _finish(started: float, verdict: Verdict) -> Verdict:
    return replace(verdict, feedback=format_feedback(verdict), seconds=time.perf_counter() - started)


__all__ = ["verify", "VerifySettings", "Verdict", "GateResult"]
