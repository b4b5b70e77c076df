-- Cumulative compile rate and correctness against iteration, per campaign: at iteration x, the
-- share of ALL the campaign's tasks that have a compiling / correct kernel at some iteration <= x.
-- Reads report_task_outcomes (task_outcomes.sql).
WITH horizon AS (
    SELECT campaign_id, max(max_iteration) AS last_iteration
    FROM report_task_outcomes
    GROUP BY campaign_id
),
steps AS (
    SELECT campaign_id, unnest(range(0, last_iteration + 1)) AS iteration
    FROM horizon
)
SELECT
    s.campaign_id,
    s.iteration,
    avg(CAST(coalesce(t.first_compile_iteration <= s.iteration, false) AS DOUBLE)) AS compile_rate,
    avg(CAST(coalesce(t.first_correct_iteration <= s.iteration, false) AS DOUBLE)) AS correct_rate
FROM steps s
JOIN report_task_outcomes t USING (campaign_id)
GROUP BY s.campaign_id, s.iteration
ORDER BY s.campaign_id, s.iteration
