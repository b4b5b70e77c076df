-- One row per (campaign, task): what the task reached within the campaign's budget.
-- Budget: attempts with iteration < the campaign's settings budget (campaigns.settings_json
-- "budget"); every recorded attempt when the campaign records none.
-- feasible = hack_passed AND compile_passed AND correct (the paper's g_feas).
-- The best kernel is memory_lake's best_kernels.sql (registered as report_best_kernels: the one
-- definition the campaign log, the lake and this report share): the highest median paired speedup
-- over the reference among feasible kernels whose timing is not flagged implausible. Its speedup is
-- that median with the verifier's 95% CI; best_ci_low is also the conservative bound where one is shown.
-- Speedup over the first feasible draft: the ratio measured when the task ended, the draft and the best
-- kernel timed in the same rounds (comparisons: median of per-round ratios, its own 95% CI; exactly 1
-- when the best kernel is the draft); without that row (older lakes, a failed comparison) the ratio of the
-- two kernels' medians from their own verifications, with a conservative interval from their CIs
-- (draft_speedup_source says which).
-- Parameters: $campaign_ids VARCHAR[].
WITH budgets AS (
    SELECT campaign_id,
           TRY_CAST(json_extract_string(last(settings_json ORDER BY recorded_at NULLS FIRST), '$.budget') AS INTEGER) AS budget
    FROM campaigns
    WHERE list_contains($campaign_ids, campaign_id)
    GROUP BY campaign_id
),
in_budget AS (
    SELECT a.* REPLACE (
               coalesce(a.timing_flag,
                        CASE WHEN NOT coalesce(a.flagged, false) THEN 'clean'
                             WHEN regexp_matches(coalesce(a.feedback, ''),
                                                 'flag: [^\n]*(implausible|exceeds the plausibility bound)')
                                 THEN 'implausible'
                             ELSE 'noisy' END) AS timing_flag),
           coalesce(a.hack_passed AND a.compile_passed AND a.correct, false) AS is_feasible,
           a.candidate_ms > 0 AND isfinite(a.candidate_ms) AS has_timing
    FROM attempts a
    LEFT JOIN budgets b USING (campaign_id)
    WHERE list_contains($campaign_ids, a.campaign_id)
      AND (b.budget IS NULL OR a.iteration < b.budget)
),
scoped AS (
    SELECT *,
           coalesce(timing_flag <> 'implausible' AND speedup > 0 AND isfinite(speedup), false) AS has_speedup
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
first_timed AS (  -- the first feasible kernel with a latency measurement that counts
    SELECT campaign_id, task_id, attempt_id AS first_attempt_id, candidate_ms AS first_feasible_ms,
           speedup AS first_speedup, ci_low AS first_ci_low, ci_high AS first_ci_high
    FROM scoped
    WHERE is_feasible AND has_speedup
    QUALIFY row_number() OVER (PARTITION BY campaign_id, task_id ORDER BY iteration, attempt_id) = 1
),
best AS (  -- the one definition (memory_lake best_kernels.sql), within the budget
    SELECT k.campaign_id, k.task_id, k.best_attempt_id, k.best_iteration, k.best_ms, k.best_speedup,
           k.best_ci_low, k.best_ci_high, k.best_timing_flag <> 'clean' AS best_flagged, k.best_timing_flag
    FROM report_best_kernels AS k
    JOIN scoped AS s ON s.attempt_id = k.best_attempt_id
),
measured_gain AS (  -- the draft and the best kernel timed in one paired verification when the task ended
    SELECT campaign_id, task_id, draft_attempt_id, best_attempt_id, ratio, ratio_ci_low, ratio_ci_high, same_kernel
    FROM comparisons
    WHERE list_contains($campaign_ids, campaign_id) AND ratio > 0
    QUALIFY row_number() OVER (PARTITION BY campaign_id, task_id ORDER BY created_at DESC) = 1
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
    -- measured: the paired ratio (its own CI); else the ratio of the two medians from separate
    -- verifications with the conservative interval of their CIs
    CASE WHEN g.best_attempt_id = b.best_attempt_id THEN g.ratio
         WHEN f.first_attempt_id = b.best_attempt_id THEN 1.0
         ELSE b.best_speedup / f.first_speedup END AS draft_speedup,
    CASE WHEN g.best_attempt_id = b.best_attempt_id THEN g.ratio_ci_low
         WHEN f.first_attempt_id = b.best_attempt_id THEN 1.0
         ELSE b.best_ci_low / f.first_ci_high END AS draft_speedup_ci_low,
    CASE WHEN g.best_attempt_id = b.best_attempt_id THEN g.ratio_ci_high
         WHEN f.first_attempt_id = b.best_attempt_id THEN 1.0
         ELSE b.best_ci_high / f.first_ci_low END AS draft_speedup_ci_high,
    CASE WHEN b.best_attempt_id IS NULL OR f.first_attempt_id IS NULL THEN NULL
         WHEN g.best_attempt_id = b.best_attempt_id AND NOT g.same_kernel THEN 'paired'
         WHEN f.first_attempt_id = b.best_attempt_id OR g.same_kernel THEN 'same kernel'
         ELSE 'separate verifications' END AS draft_speedup_source,
    b.best_attempt_id,
    b.best_iteration,
    b.best_speedup,
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
LEFT JOIN measured_gain g USING (campaign_id, task_id)
LEFT JOIN task_calls c USING (campaign_id, task_id)
ORDER BY p.campaign_id, p.level, p.category, p.task_id
