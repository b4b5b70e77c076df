-- One row per (campaign, task): what the task reached within the campaign's budget.
-- Budget: attempts with iteration < the campaign's settings budget (campaigns.settings_json
-- "budget"); every recorded attempt when the campaign records none.
-- feasible = hack_passed AND compile_passed AND correct (the paper's g_feas).
-- Flagged timings (the verifier's "flag:" feedback line) enter the speedup figures as follows:
-- noisy timing (a loaded machine) counts at the conservative end of its 95% CI, not its median
-- (the low end as a best kernel's speedup, the high end as the first draft's a gain is measured
-- from); a time faster than the roofline or beyond the plausibility bound is left out.
-- Parameters: $campaign_ids VARCHAR[].
WITH budgets AS (
    SELECT campaign_id,
           TRY_CAST(json_extract_string(last(settings_json ORDER BY recorded_at NULLS FIRST), '$.budget') AS INTEGER) AS budget
    FROM campaigns
    WHERE list_contains($campaign_ids, campaign_id)
    GROUP BY campaign_id
),
in_budget AS (
    SELECT a.*,
           coalesce(a.hack_passed AND a.compile_passed AND a.correct, false) AS is_feasible,
           a.candidate_ms > 0 AND isfinite(a.candidate_ms) AS has_timing,
           CASE WHEN NOT coalesce(a.flagged, false) THEN 'clean'
                WHEN regexp_extract(coalesce(a.feedback, ''), 'flag: ([^\n]*)', 1) SIMILAR TO
                     '.*(implausible|exceeds the plausibility bound).*' THEN 'implausible'
                ELSE 'noisy' END AS timing_flag
    FROM attempts a
    LEFT JOIN budgets b USING (campaign_id)
    WHERE list_contains($campaign_ids, a.campaign_id)
      AND (b.budget IS NULL OR a.iteration < b.budget)
),
scoped AS (
    SELECT *,
           CASE timing_flag WHEN 'clean' THEN speedup WHEN 'noisy' THEN ci_low END AS counted_speedup,
           CASE timing_flag WHEN 'clean' THEN speedup WHEN 'noisy' THEN ci_high END AS counted_as_start,
           coalesce(CASE timing_flag WHEN 'clean' THEN speedup WHEN 'noisy' THEN ci_low END > 0
                    AND isfinite(CASE timing_flag WHEN 'clean' THEN speedup WHEN 'noisy' THEN ci_low END), false)
               AS has_speedup
    FROM in_budget
),
per_task AS (
    SELECT
        campaign_id,
        task_id,
        min(level) AS level,
        min(category) AS category,
        count(*) AS n_attempts,
        count(*) FILTER (WHERE compile_passed) AS n_compiled,
        count(*) FILTER (WHERE correct) AS n_correct,
        -- correct kernels, each counted once: an identical resubmission (same code hash) is the same kernel
        count(DISTINCT coalesce(code_sha256, attempt_id)) FILTER (WHERE correct) AS n_correct_kernels,
        count(*) FILTER (WHERE is_feasible) AS n_feasible,
        max(iteration) AS max_iteration,
        min(iteration) FILTER (WHERE compile_passed) AS first_compile_iteration,
        min(iteration) FILTER (WHERE correct) AS first_correct_iteration,
        min(iteration) FILTER (WHERE is_feasible) AS first_feasible_iteration,
        count(*) FILTER (WHERE is_feasible AND timing_flag = 'implausible') AS n_implausible,
        CAST(sum(coalesce(input_tokens, 0) + coalesce(output_tokens, 0)) AS BIGINT) AS attempt_tokens,
        CAST(sum(coalesce(input_tokens, 0) + coalesce(output_tokens, 0))
             FILTER (WHERE tokens_estimated) AS BIGINT) AS attempt_estimated_tokens,
        sum(coalesce(cost_usd, 0)) AS attempt_cost_usd,
        sum(coalesce(verify_seconds, 0)) AS verify_seconds,
        sum(coalesce(llm_seconds, 0)) AS llm_seconds
    FROM scoped
    GROUP BY campaign_id, task_id
),
first_timed AS (  -- the first feasible draft with a latency measurement that counts
    SELECT campaign_id, task_id, candidate_ms AS first_feasible_ms, counted_as_start AS first_speedup,
           ci_low AS first_ci_low, ci_high AS first_ci_high
    FROM scoped
    WHERE is_feasible AND has_speedup
    QUALIFY row_number() OVER (PARTITION BY campaign_id, task_id ORDER BY iteration, attempt_id) = 1
),
best AS (  -- the best feasible kernel by its counted speedup over the PyTorch reference
    SELECT campaign_id, task_id, attempt_id AS best_attempt_id, iteration AS best_iteration, candidate_ms AS best_ms,
           counted_speedup AS best_speedup, speedup AS best_measured_speedup, ci_low AS best_ci_low,
           ci_high AS best_ci_high, timing_flag <> 'clean' AS best_flagged, timing_flag AS best_timing_flag
    FROM scoped
    WHERE is_feasible AND has_speedup
    QUALIFY row_number() OVER (PARTITION BY campaign_id, task_id ORDER BY counted_speedup DESC, iteration, attempt_id) = 1
),
task_calls AS (  -- non-attempt LLM calls (e.g. distillation) attributed to a task
    SELECT campaign_id, task_id, count(*) AS extra_llm_calls,
           CAST(sum(coalesce(input_tokens, 0) + coalesce(output_tokens, 0)) AS BIGINT) AS extra_tokens,
           CAST(sum(coalesce(input_tokens, 0) + coalesce(output_tokens, 0))
                FILTER (WHERE tokens_estimated) AS BIGINT) AS extra_estimated_tokens,
           sum(coalesce(cost_usd, 0)) AS extra_cost_usd
    FROM llm_calls
    WHERE list_contains($campaign_ids, campaign_id) AND task_id IS NOT NULL
    GROUP BY campaign_id, task_id
)
SELECT
    p.*,
    f.first_feasible_ms,
    b.best_ms,
    -- ratio of the two kernels' speedups over the reference, each timed against the reference in its
    -- own verification (so machine-load drift between the two verifications cancels); it equals the
    -- latency ratio first / best when the reference time is steady
    b.best_speedup / f.first_speedup AS draft_speedup,
    -- conservative interval of the ratio from the verifier's speedup CIs of the two kernels
    b.best_ci_low / f.first_ci_high AS draft_speedup_ci_low,
    b.best_ci_high / f.first_ci_low AS draft_speedup_ci_high,
    b.best_attempt_id,
    b.best_iteration,
    b.best_speedup,
    b.best_measured_speedup,
    b.best_ci_low,
    b.best_ci_high,
    b.best_flagged,
    b.best_timing_flag,
    p.n_attempts + coalesce(c.extra_llm_calls, 0) AS llm_calls,
    p.attempt_tokens + coalesce(c.extra_tokens, 0) AS tokens,
    -- tokens of calls whose response carried no usage (len/4 estimates; the rest are the provider's counts)
    coalesce(p.attempt_estimated_tokens, 0) + coalesce(c.extra_estimated_tokens, 0) AS estimated_tokens,
    p.attempt_cost_usd + coalesce(c.extra_cost_usd, 0) AS cost_usd
FROM per_task p
LEFT JOIN first_timed f USING (campaign_id, task_id)
LEFT JOIN best b USING (campaign_id, task_id)
LEFT JOIN task_calls c USING (campaign_id, task_id)
ORDER BY p.campaign_id, p.level, p.category, p.task_id
