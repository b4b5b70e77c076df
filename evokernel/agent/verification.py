"""Verifying a step's candidate for the agent: the verifier's gates, bounded concurrency per
backend device, and the one retry rule for verifications.

The retry rule, owned here and nowhere else (the Prefect verify task does not retry): a failed gate
is a result and is never retried; an infrastructure error (the verifier itself failed: a reference
worker crash, a sandbox that could not start, inputs that do not fit) is retried
``VERIFY_RETRY_DELAYS_S`` times, and the last verdict is returned: the step records it as the
machine's outcome, unscored (evokernel.agent.attribution), and a task stops after
``attribution.MACHINE_STREAK_LIMIT`` of them in a row.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Callable

from kernelbench_npu.spec import TaskSpec
from verifier.api import verify
from verifier.gate_plan import is_unavailable
from verifier.result import Verdict
from verifier.settings import VerifySettings

VERIFY_RETRY_DELAYS_S = (5.0, 30.0)


_VERIFY_SLOTS: dict[str, threading.BoundedSemaphore] = {}
_SLOTS_LOCK = threading.Lock()


def verify_slots(backend: str, concurrency: int) -> threading.BoundedSemaphore:
    """The process-wide bound on simultaneous verifications of one backend (its device is shared).

    Across processes (Dask workers, several campaigns) use the Prefect tag concurrency limit on
    ``verify-<backend>`` instead; see tasks/defaults.py.
    """
    with _SLOTS_LOCK:
        return _VERIFY_SLOTS.setdefault(backend, threading.BoundedSemaphore(concurrency))


def verify_candidate(task: TaskSpec, code: str, backend: str, settings: VerifySettings, concurrency: int,
                     delays_s: tuple[float, ...] = VERIFY_RETRY_DELAYS_S,
                     sleep: Callable[[float], None] = time.sleep) -> Verdict:
    """The verdict on ``code``; infrastructure errors are retried, the last one returned with the
    number of attempts in its reason."""
    for attempt in range(len(delays_s) + 1):
        with verify_slots(backend, concurrency):
            verdict = verify(task, code, backend, settings)
        if not verdict.infrastructure_error:
            return verdict
        if attempt < len(delays_s):
            sleep(delays_s[attempt])
    first = verdict.infrastructure_error.strip().splitlines()[0] if verdict.infrastructure_error.strip() else "?"
    return replace(verdict, infrastructure_error=f"{first} (after {len(delays_s) + 1} attempts)")


def verdict_outcome(verdict: Verdict | None) -> tuple[str, str]:
    """How a step's verification ended, as a word and a line (what its Prefect task's final state is
    named and says, so a rejected kernel is not logged as "Completed"): Passed, Feasible (every gate
    this machine runs passed; latency cannot run here), Rejected (a gate failed: the candidate's),
    Not judged (the machine's outcome, evokernel.agent.attribution) or No kernel (nothing to verify)."""
    if verdict is None:
        return "No kernel", "the answer held no usable kernel: nothing was verified"
    if verdict.infrastructure_error:
        return "Not judged", verdict.infrastructure_error.strip().splitlines()[0][:300]
    failed = next((g for g in verdict.gates if not g.passed), None)
    if failed is None:
        return "Passed", "every gate passed"
    if not is_unavailable(failed):
        return "Rejected", f"failed {failed.name}: {failed.reason}"[:300]
    if verdict.feasible:
        return "Feasible", f"passed every gate this machine can run; {failed.reason}"[:300]
    return "Not judged", failed.reason[:300]
