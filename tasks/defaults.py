"""The one place that sets Prefect task defaults (retries, backoff, caching, tags).

Every task in tasks/ takes its options from here so policy changes in one spot.
"""

from __future__ import annotations

from prefect.cache_policies import NO_CACHE

# Campaign tasks carry live objects (lake, LLM client, runtime): never cache or persist results.
_LIVE = dict(cache_policy=NO_CACHE, persist_result=False)

# Retries have one owner each, and it is not Prefect:
# - LLM calls: the provider retries rate limits, 5xx, timeouts and connection errors with jittered
#   backoff inside a budget (evokernel.llm.retry); authentication and bad requests are fatal.
# - Verification: a failed gate is a result; infrastructure errors are retried by
#   evokernel.agent.verification, then the step fails unscored and a rerun redoes it.
# - A campaign task is resumable: rerunning the campaign id continues where it stopped.
LLM_TASK = dict(retries=0, **_LIVE)
VERIFY_TASK = dict(retries=0, **_LIVE)
CAMPAIGN_TASK = dict(retries=0, **_LIVE)

# Builds: cached by input hash so a rerun with the same sources and variant is free.
BUILD_TASK = dict(retries=0)

# Reports: read-only over the lake and rewritten whole each run; a failure is a bug, not flakiness.
REPORT_TASK = dict(retries=0, **_LIVE)

# Experiments: a run's lake copy is made once (a rerun finds it), the report is rewritten whole.
EXPERIMENT_TASK = dict(retries=0, **_LIVE)


def verify_tag(backend: str) -> str:
    """Tag of verification tasks: bound concurrency per backend device with
    `prefect concurrency-limit create verify-cpu 2` when a Prefect server is used."""
    return f"verify-{backend}"
