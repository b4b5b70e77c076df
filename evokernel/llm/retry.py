"""The one retry policy for LLM calls: exponential backoff with full jitter, within a budget.

A retryable failure is retried after ``uniform(0, min(cap, base * 2**n))`` seconds (at least the
server's Retry-After when it sent one), until either ``max_retries`` retries were made or the
next sleep would take the call past ``budget_s`` seconds in total; then
:class:`~evokernel.llm.errors.RetryBudgetExhausted` is raised. Fatal errors are raised at once.
The SDKs' own retries are switched off (``max_retries=0``), so this is the only policy.
``sleep``, ``clock`` and ``rng`` are injectable so tests never really sleep.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass
from typing import Callable, TypeVar

from evokernel.llm.errors import FatalLLMError, RetryableLLMError, RetryBudgetExhausted

T = TypeVar("T")
log = logging.getLogger("evokernel.llm")


def log_retry(number: int, error: Exception, delay_s: float) -> None:
    """The default retry report: one warning line on the ``evokernel.llm`` logger."""
    log.warning("LLM call failed (%s); retry %d in %.1fs", error, number, delay_s)


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 5
    budget_s: float = 300.0
    base_s: float = 1.0
    cap_s: float = 60.0

    def __post_init__(self) -> None:
        if self.max_retries < 0 or self.budget_s <= 0 or self.base_s <= 0 or self.cap_s <= 0:
            raise ValueError(f"RetryPolicy: invalid values {self}")

    @classmethod
    def from_settings(cls, settings) -> "RetryPolicy":
        return cls(max_retries=settings.llm_max_retries, budget_s=settings.llm_retry_budget_s)

    def backoff_s(self, retry_number: int, rng: random.Random) -> float:
        """Full jitter: a uniform draw below the exponential ceiling for this retry (0-based)."""
        ceiling = min(self.cap_s, self.base_s * (2 ** retry_number))
        return rng.uniform(0.0, ceiling)


@dataclass(frozen=True)
class RetryOutcome:
    value: object
    retries: int
    seconds: float


def call_with_retries(
    call: Callable[[], T],
    policy: RetryPolicy,
    *,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    rng: random.Random | None = None,
    on_retry: Callable[[int, RetryableLLMError, float], None] | None = None,
) -> RetryOutcome:
    """Run ``call`` until it returns, a fatal error, or the retry budget is spent.

    ``call`` must raise only LLMError subclasses for API failures. ``on_retry(n, error, delay)``
    is told about each retry before its sleep (default: a warning on the ``evokernel.llm`` logger).
    """
    rng = rng or random.Random()
    on_retry = on_retry or log_retry
    start = clock()
    retries = 0
    while True:
        try:
            value = call()
            return RetryOutcome(value=value, retries=retries, seconds=clock() - start)
        except FatalLLMError:
            raise
        except RetryableLLMError as exc:
            delay = max(policy.backoff_s(retries, rng), exc.retry_after_s or 0.0)
            elapsed = clock() - start
            if retries >= policy.max_retries or elapsed + delay > policy.budget_s:
                raise RetryBudgetExhausted(
                    f"gave up after {retries} retries in {elapsed:.1f}s "
                    f"(max {policy.max_retries} retries, budget {policy.budget_s:g}s): {exc}",
                    last_error=exc, retries=retries,
                ) from exc
            on_retry(retries + 1, exc, delay)
            sleep(delay)
            retries += 1
