"""The one place that sets Prefect task defaults (retries, backoff, timeouts, tags).

Every task in tasks/ takes its options from here so policy changes in one spot.
"""

from __future__ import annotations

from prefect.tasks import exponential_backoff

# LLM calls: retried by the provider layer on retryable errors only; Prefect adds an outer retry
# for the same errors if a whole call fails after the provider's own budget.
LLM_TASK = dict(retries=2, retry_delay_seconds=exponential_backoff(backoff_factor=5), retry_jitter_factor=0.5)

# Verification: a failed gate is a result, never retried; only infrastructure errors raise and retry.
VERIFY_TASK = dict(retries=2, retry_delay_seconds=[5, 30])

# Builds: cached by input hash so a rerun with the same sources and variant is free.
BUILD_TASK = dict(retries=0)

# Lake writes: cheap and idempotent per batch id.
LAKE_TASK = dict(retries=3, retry_delay_seconds=[1, 5, 15])

# Verification concurrency is bounded by a tag per backend device (set a concurrency limit on it
# with `prefect concurrency-limit create verify-cpu 2` when a server is used).
def verify_tag(backend: str) -> str:
    return f"verify-{backend}"
