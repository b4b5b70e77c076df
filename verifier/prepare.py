"""One candidate made ready for its verification: the static checks (the hack gate), the backend's
precheck, and a monitor session for the gates after them (verifier.monitor.session). Shared by
``verify`` and ``compare`` (verifier.api)."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

from kernelbench_npu.spec import TaskSpec
from verifier.backends import get_backend
from verifier.gate_plan import plan_gates, quoted
from verifier.gates.hack import static_gate
from verifier.machine_peaks import machine_peaks
from verifier.monitor.pool import POOL
from verifier.monitor.session import Candidate, Session, reference_key
from verifier.result import GateResult, SessionFacts, Verdict
from verifier.sandbox import native_build, observer
from verifier.seeds import new_master_seed
from verifier.settings import VerifySettings


@dataclass(frozen=True)
class Prepared:
    """A candidate past the static checks, with the session that will run its other gates."""

    session: Session
    hack: GateResult
    code_sha: str
    task_id: str
    backend: str

    def verdict(self, gates: tuple[GateResult, ...], latency=None, **fields) -> Verdict:
        fields.setdefault("facts", SessionFacts(seed=self.session.seed))
        return Verdict(self.task_id, self.backend, self.code_sha, gates, latency, **fields)


def prepare(task: TaskSpec, candidate_source: str, backend: str, settings: VerifySettings,
            seed: int | None = None) -> Prepared | Verdict:
    """The static checks and a session for the rest; a Verdict where nothing more can run (a failed
    static check or precheck, a backend that cannot run here)."""
    code_sha = hashlib.sha256(candidate_source.encode(errors="surrogatepass")).hexdigest()
    try:
        backend_impl = get_backend(backend)
        availability = backend_impl.availability()
    except Exception as exc:  # unknown backend, import failure of an optional backend
        return Verdict(task.task_id, backend, code_sha, (), infrastructure_error=f"backend {backend!r}: {exc}")
    plan = plan_gates(availability)
    if not plan.substantive:  # nothing beyond the static checks could run: say why, never a verdict
        return Verdict(task.task_id, backend, code_sha, (),
                       infrastructure_error=f"backend {backend} unavailable: {availability.reason}")
    hack = static_gate(candidate_source, task.dtype, settings.disabled_checks, backend_impl.static_imports)
    if not hack.passed:
        return Verdict(task.task_id, backend, code_sha, (hack,))
    plan = plan_gates(backend_impl.availability_for(candidate_source, availability))
    start = time.perf_counter()
    problem = backend_impl.precheck(candidate_source)
    if problem:
        gate = GateResult("compile", False, quoted(problem.splitlines()[0])[:300], time.perf_counter() - start,
                          detail=problem)
        return Verdict(task.task_id, backend, code_sha, (hack, gate))
    candidate = Candidate(task, candidate_source, backend_impl, backend_impl.compile_context(task),
                          backend_impl.correctness_task_source(task.source), backend)
    if seed is None and settings.seed is None and plan.runs("correctness"):  # a worker primed for it: its seed
        seed = POOL.primed_seed(reference_key(candidate, settings))
    seed = seed if seed is not None else settings.seed if settings.seed is not None else new_master_seed()
    peaks = machine_peaks(backend, settings.threads).peaks if plan.runs("latency") else None
    library, _why = observer.library(native_build.machine_root(settings.cache_dir)) if plan.runs("correctness") else (None, "")
    session = Session(candidate, settings, plan, seed, peaks, str(library or ""))
    return Prepared(session, hack, code_sha, task.task_id, backend)
