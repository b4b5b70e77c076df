"""The public entry point: ``verify(task, candidate_source, backend, settings) -> Verdict``.

Order: hack (the static policy, here in the monitor) -> compile -> correctness -> latency, stopping at
the first failure. Everything after the static checks is the monitor's session
(verifier.monitor.session): a confined runner imports the candidate and calls ``forward``, a confined
reference worker computes the reference from the secret seeds, a confined builder compiles what the
runner's loader calls asked for, and the monitor decides every gate and takes every time. Never
raises for a bad candidate; failures of the machine set ``Verdict.infrastructure_error``.

``compare(task, {name: source, ...})`` times several candidates and the reference together in one
paired measurement (verifier.compare): how much faster one kernel is than another, measured.
"""

from __future__ import annotations

import time
from dataclasses import replace

from kernelbench_npu.spec import TaskSpec
from verifier.compare import Comparison, compare
from verifier.feedback import format_feedback
from verifier.monitor.session import InfrastructureError
from verifier.prepare import prepare
from verifier.result import GateResult, Verdict
from verifier.settings import VerifySettings


def verify(task: TaskSpec, candidate_source: str, backend: str = "cpu",
           settings: VerifySettings | None = None) -> Verdict:
    settings = settings or VerifySettings()
    started = time.perf_counter()
    prepared = prepare(task, candidate_source, backend, settings)
    if isinstance(prepared, Verdict):
        return _finish(started, prepared)
    try:
        result = prepared.session.run(prepared.hack)
    except (InfrastructureError, OSError) as exc:
        return _finish(started, prepared.verdict((prepared.hack,), infrastructure_error=str(exc)))
    return _finish(started, prepared.verdict(result.gates, result.latency, facts=result.facts,
                                             warnings=result.warnings))


def _finish(started: float, verdict: Verdict) -> Verdict:
    return replace(verdict, feedback=format_feedback(verdict), seconds=time.perf_counter() - started)


__all__ = ["compare", "verify", "VerifySettings", "Verdict", "GateResult"]
