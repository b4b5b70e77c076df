-- The attempt columns the data-quality suite checks: the attempts of the campaigns in scope and
-- every attempt that names no campaign at all (those belong to no report and are a failure).
-- speedup_finite is NULL where no speedup was measured (GX ignores nulls; pandas reads NaN as null).
-- Parameters: $campaign_ids VARCHAR[].
SELECT
    attempt_id, campaign_id, task_id, stage, iteration,
    hack_passed, compile_passed, correct, latency_passed, feasible,
    candidate_ms, reference_ms, speedup, ci_low, ci_high, reward,
    isfinite(speedup) AS speedup_finite
FROM attempts
WHERE campaign_id IS NULL OR list_contains($campaign_ids, campaign_id)
