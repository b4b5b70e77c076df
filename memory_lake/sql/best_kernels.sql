-- The best kernel of each task of the given campaigns: the one definition the campaign log
-- (evokernel.agent.state mirrors it), the lake (campaign progress) and the report use.
-- Among the task's feasible attempts (attempts.feasible: hack, compile and correctness passed) with a measured paired
-- speedup over the reference (median over rounds) whose timing is not flagged implausible (faster than
-- the machine's measured roofline allows, or beyond the plausibility bound where no roofline exists),
-- the highest median speedup; ties go to the earlier iteration. A noisy timing still counts at its median
-- (its CI says how noisy). timing_flag is null in rows written before it: the feedback's "flag:" line then.
-- Within the campaign's budget (its latest settings' "budget"; every attempt when none is recorded).
-- Parameters: $campaign_ids VARCHAR[].
WITH budgets AS (
    SELECT campaign_id,
           TRY_CAST(json_extract_string(last(settings_json ORDER BY recorded_at NULLS FIRST), '$.budget') AS INTEGER)
               AS budget
    FROM campaigns
    WHERE list_contains($campaign_ids, campaign_id)
    GROUP BY campaign_id
),
classified AS (
    SELECT a.*,
           coalesce(a.timing_flag,
                    CASE WHEN NOT coalesce(a.flagged, false) THEN 'clean'
                         WHEN regexp_matches(coalesce(a.feedback, ''),
                                             'flag: [^\n]*(implausible|exceeds the plausibility bound)')
                             THEN 'implausible'
                         ELSE 'noisy' END) AS timing_class
    FROM attempts AS a
    LEFT JOIN budgets AS b USING (campaign_id)
    WHERE list_contains($campaign_ids, a.campaign_id) AND (b.budget IS NULL OR a.iteration < b.budget)
)
SELECT campaign_id, task_id, attempt_id AS best_attempt_id, iteration AS best_iteration, speedup AS best_speedup,
       ci_low AS best_ci_low, ci_high AS best_ci_high, candidate_ms AS best_ms, timing_class AS best_timing_flag
FROM classified
WHERE coalesce(feasible, hack_passed AND compile_passed AND correct, false)
  AND speedup > 0 AND isfinite(speedup) AND timing_class <> 'implausible'
QUALIFY row_number() OVER (PARTITION BY campaign_id, task_id ORDER BY speedup DESC, iteration, attempt_id) = 1
ORDER BY campaign_id, task_id
