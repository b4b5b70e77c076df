"""The one place that sets Prefect task defaults (retries, backoff, caching, tags).

Every task in tasks/ takes its options from here so policy changes in one spot.
"""

from __future__ import annotations

from prefect.cache_policies import NO_CACHE
from prefect.tasks import exponential_backoff

# Steps carry live objects (lake, LLM client, verifier): never cache or persist their results.
_LIVE = dict(cache_policy=NO_CACHE, persist_result=False)

# LLM calls: the provider retries retryable errors (rate limit, 5xx, timeout, connection) with
# jittered backoff inside its budget; Prefect adds an outer retry for the same errors only
# (retry_condition_fn in tasks/campaign.py), never for authentication or bad requests.
LLM_TASK = dict(retries=2, retry_delay_seconds=exponential_backoff(backoff_factor=5), retry_jitter_factor=0.5, **_LIVE)

# Verification: a failed gate is a result, never retried; only infrastructure errors retry.
VERIFY_TASK = dict(retries=2, retry_delay_seconds=[5, 30], **_LIVE)

# One (task, iteration) step of a campaign: retried only through its LLM and verify sub-tasks.
STEP_TASK = dict(retries=0, **_LIVE)

# One benchmark task of a campaign (all its steps): resumable, so a retry continues, never repeats.
CAMPAIGN_TASK = dict(retries=1, retry_delay_seconds=[10], **_LIVE)

# Distillation after a task: an LLM call with the same retry rule as generation.
DISTILL_TASK = dict(retries=2, retry_delay_seconds=exponential_backoff(backoff_factor=5), **_LIVE)

# Builds: cached by input hash so a rerun with the same sources and variant is free.
BUILD_TASK = dict(retries=0)

# Lake writes: cheap and idempotent per batch id.
LAKE_TASK = dict(retries=3, retry_delay_seconds=[1, 5, 15], **_LIVE)

# Reports: read-only over the lake and rewritten whole each run; a failure is a bug, not flakiness.
REPORT_TASK = dict(retries=0, **_LIVE)


def verify_tag(backend: str) -> str:
    """Tag of verification tasks: bound concurrency per backend device with
    `prefect concurrency-limit create verify-cpu 2` when a Prefect server is used."""
    return f"verify-{backend}"
