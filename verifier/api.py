"""The public entry point: ``verify(task, candidate_source, backend, settings) -> Verdict``.

Order: hack (static, in this process) -> compile -> correctness -> latency, stopping at the first
failure. Everything after the static checks runs in two sandboxed processes started at once: the
candidate child (compile, load, trials, timing) and the reference worker (never imports candidate
code), so the reference outputs are computed while the candidate compiles. Never raises for a bad
candidate; verifier failures set ``Verdict.infrastructure_error``.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import replace

from kernelbench_npu.spec import TaskSpec
from verifier.backends import get_backend
from verifier.feedback import format_feedback
from verifier.gate_plan import plan_gates
from verifier.gates.hack import static_gate
from verifier.machine_peaks import machine_peaks
from verifier.result import GateResult, SessionFacts, Verdict
from verifier.sandbox.workspace import Workspace
from verifier.seeds import derive_seed, new_master_seed
from verifier.session import InfrastructureError, Secrets, Session
from verifier.settings import VerifySettings


def verify(task: TaskSpec, candidate_source: str, backend: str = "cpu",
           settings: VerifySettings | None = None) -> Verdict:
    settings = settings or VerifySettings()
    started = time.perf_counter()
    code_sha = hashlib.sha256(candidate_source.encode()).hexdigest()
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
        gate = GateResult("compile", False, problem.splitlines()[0][:300], time.perf_counter() - start, detail=problem)
        return _finish(started, Verdict(task.task_id, backend, code_sha, (hack, gate)))
    seed = settings.seed if settings.seed is not None else new_master_seed()
    workspace = Workspace.create(settings.cache_dir, backend_impl.cache_entries(candidate_source))
    keys = Secrets(init_seed=derive_seed(seed, "init"), input_seed=derive_seed(seed, "inputs"),
                   child_nonce=secrets.token_hex(16), reference_nonce=secrets.token_hex(16))
    peaks = machine_peaks(backend, settings.threads).peaks if plan.runs("latency") else None
    session = Session(task, candidate_source, backend, settings.with_(cache_dir=workspace.build_dir), workspace.root,
                      keys, plan, task_source=backend_impl.correctness_task_source(task.source),
                      backend_context=backend_impl.compile_context(task), peaks=peaks)
    try:
        result = session.run_gates(hack)
        verdict = Verdict(task.task_id, backend, code_sha, result.gates, result.latency,
                          facts=replace(result.facts, seed=seed))
    except InfrastructureError as exc:
        verdict = Verdict(task.task_id, backend, code_sha, (hack,), infrastructure_error=str(exc),
                          facts=SessionFacts(seed=seed))
    finally:
        session.close()
        workspace.close(session.compile_report)
    if session.child is not None:  # how the sandbox was isolated; "isolation unavailable: ..." warns
        verdict = replace(verdict, warnings=session.child.isolation.warnings,
                          facts=replace(verdict.facts, isolation=session.child.isolation.mechanism))
    return _finish(started, verdict)


def _finish(started: float, verdict: Verdict) -> Verdict:
    return replace(verdict, feedback=format_feedback(verdict), seconds=time.perf_counter() - started)


__all__ = ["verify", "VerifySettings", "Verdict", "GateResult"]
