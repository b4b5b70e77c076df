"""Verifying a step's candidate for the agent: the verifier's gates, bounded concurrency per
backend device, and the one retry rule for verifications.

The retry rule, owned here and nowhere else (the Prefect verify task does not retry): a failed gate
is a result and is never retried; an infrastructure error (the verifier itself failed: a reference
worker crash, a sandbox that could not start) is retried ``VERIFY_RETRY_DELAYS_S`` times, then
raised as :class:`VerifierInfrastructureError` so the step is not scored and a rerun of the
campaign redoes it.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from kernelbench_npu.spec import TaskSpec
from verifier.api import verify
from verifier.result import Verdict
from verifier.settings import VerifySettings

VERIFY_RETRY_DELAYS_S = (5.0, 30.0)


class VerifierInfrastructureError(RuntimeError):
    """The verifier itself failed (not the candidate): never scored, the step is redone on resume."""


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
    """The verdict on ``code``; infrastructure errors are retried, then raised."""
    for attempt in range(len(delays_s) + 1):
        with verify_slots(backend, concurrency):
            verdict = verify(task, code, backend, settings)
        if not verdict.infrastructure_error:
            return verdict
        if attempt < len(delays_s):
            sleep(delays_s[attempt])
    raise VerifierInfrastructureError(f"{task.task_id}: {verdict.infrastructure_error.splitlines()[0]} "
                                      f"(after {len(delays_s) + 1} attempts)")
