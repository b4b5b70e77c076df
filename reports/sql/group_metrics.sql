-- Per campaign, and per level and op category within it: the headline metrics, aggregated over
-- the per-task outcomes (view report_task_outcomes, the result of task_outcomes.sql).
-- Task shares have ALL tasks of the group in the denominator (KernelBench's fast_p definition).
-- Parameters: $campaign_ids VARCHAR[] (for LLM calls attributed to no task: 'all' group only).
WITH unassigned_calls AS (
    SELECT campaign_id, count(*) AS calls,
           CAST(sum(coalesce(input_tokens, 0) + coalesce(output_tokens, 0)) AS BIGINT) AS tokens,
           CAST(coalesce(sum(coalesce(input_tokens, 0) + coalesce(output_tokens, 0))
                FILTER (WHERE tokens_estimated), 0) AS BIGINT) AS estimated_tokens,
           sum(coalesce(cost_usd, 0)) AS cost_usd
    FROM llm_calls
    WHERE list_contains($campaign_ids, campaign_id) AND task_id IS NULL
    GROUP BY campaign_id
),
grouped AS (
    SELECT
        campaign_id,
        CASE WHEN GROUPING(level) = 0 THEN 'level'
             WHEN GROUPING(category) = 0 THEN 'category'
             ELSE 'all' END AS group_kind,
        CASE WHEN GROUPING(level) = 0 THEN 'level ' || coalesce(CAST(level AS VARCHAR), '?')
             WHEN GROUPING(category) = 0 THEN coalesce(category, '?')
             ELSE 'all' END AS group_name,
        count(*) AS n_tasks,
        CAST(sum(n_attempts) AS BIGINT) AS n_attempts,
        avg(CAST(n_compiled > 0 AS DOUBLE)) AS compile_rate_tasks,
        avg(CAST(n_correct > 0 AS DOUBLE)) AS correct_rate_tasks,
        avg(CAST(n_feasible > 0 AS DOUBLE)) AS feasible_rate_tasks,
        sum(n_compiled) / sum(n_attempts) AS compile_rate_attempts,
        sum(n_correct) / sum(n_attempts) AS correct_rate_attempts,
        count(draft_speedup) AS n_draft_speedup_tasks,
        -- measured in one paired verification (or exactly 1: the best kernel is the draft) vs estimated
        count(*) FILTER (WHERE draft_speedup_source IN ('paired', 'same kernel')) AS n_draft_speedup_measured,
        quantile_cont(draft_speedup, 0.5) AS draft_speedup_median,
        quantile_cont(draft_speedup, 0.25) AS draft_speedup_q1,
        quantile_cont(draft_speedup, 0.75) AS draft_speedup_q3,
        quantile_cont(draft_speedup_ci_low, 0.5) AS draft_speedup_median_ci_low,
        quantile_cont(draft_speedup_ci_high, 0.5) AS draft_speedup_median_ci_high,
        count(best_speedup) AS n_speedup_tasks,
        exp(avg(ln(best_speedup))) AS speedup_geomean,
        exp(avg(ln(best_ci_low))) AS speedup_geomean_ci_low,
        exp(avg(ln(best_ci_high))) AS speedup_geomean_ci_high,
        count(*) FILTER (WHERE best_flagged) AS n_flagged_best,  -- noisy: the median counts, its CI is wide
        count(*) FILTER (WHERE n_implausible > 0) AS n_implausible_tasks,  -- implausible timings left out
        avg(CAST(n_correct > 0 AS DOUBLE)) AS fast_0,
        avg(CAST(coalesce(best_speedup > 1.0, false) AS DOUBLE)) AS fast_1,
        avg(CAST(coalesce(best_speedup > 1.5, false) AS DOUBLE)) AS fast_1_5,
        avg(CAST(coalesce(best_speedup > 2.0, false) AS DOUBLE)) AS fast_2,
        -- conservative bound: tasks whose best kernel's 95% CI lies above 1 (faster beyond the timing noise)
        avg(CAST(coalesce(best_ci_low > 1.0, false) AS DOUBLE)) AS fast_1_ci_low,
        count(first_feasible_iteration) AS n_feasible_tasks,
        quantile_cont(first_feasible_iteration + 1, 0.5) AS iterations_to_first_feasible_median,
        avg(first_feasible_iteration + 1) AS iterations_to_first_feasible_mean,
        CAST(sum(llm_calls) AS BIGINT) AS llm_calls,
        CAST(sum(tokens) AS BIGINT) AS tokens,
        CAST(sum(estimated_tokens) AS BIGINT) AS estimated_tokens,
        sum(cost_usd) AS cost_usd,
        sum(verify_seconds) AS verify_seconds,
        sum(llm_seconds) AS llm_seconds,
        CAST(sum(n_correct_kernels) AS BIGINT) AS n_correct_kernels  -- distinct code per task
    FROM report_task_outcomes
    GROUP BY GROUPING SETS ((campaign_id), (campaign_id, level), (campaign_id, category))
),
costed AS (
    SELECT
        g.* REPLACE (
            g.llm_calls + CASE WHEN g.group_kind = 'all' THEN coalesce(u.calls, 0) ELSE 0 END AS llm_calls,
            g.tokens + CASE WHEN g.group_kind = 'all' THEN coalesce(u.tokens, 0) ELSE 0 END AS tokens,
            g.estimated_tokens + CASE WHEN g.group_kind = 'all' THEN coalesce(u.estimated_tokens, 0) ELSE 0 END
                AS estimated_tokens,
            g.cost_usd + CASE WHEN g.group_kind = 'all' THEN coalesce(u.cost_usd, 0) ELSE 0 END AS cost_usd
        )
    FROM grouped g
    LEFT JOIN unassigned_calls u USING (campaign_id)
)
SELECT
    *,
    CAST(llm_calls AS DOUBLE) / nullif(n_correct_kernels, 0) AS llm_calls_per_correct_kernel,
    CAST(tokens AS DOUBLE) / nullif(n_correct_kernels, 0) AS tokens_per_correct_kernel,
    cost_usd / nullif(n_correct_kernels, 0) AS cost_usd_per_correct_kernel,
    verify_seconds / nullif(n_correct_kernels, 0) AS verify_seconds_per_correct_kernel
FROM costed
ORDER BY campaign_id,
         CASE group_kind WHEN 'all' THEN 0 WHEN 'level' THEN 1 ELSE 2 END,
         group_name
