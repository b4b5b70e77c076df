-- Progress of a campaign: its committed attempts per task, whether one was feasible and the newest
-- attempt (the CLI's progress bar polls this while workers on other processes or machines write the
-- lake); the best speedup comes from best_kernels.sql (Lake.campaign_progress joins them).
SELECT task_id, count(*) AS attempts, coalesce(bool_or(feasible), false) AS feasible,
       max(iteration) AS last_iteration, max(created_at) AS last_at
FROM attempts
WHERE campaign_id = $campaign_id
GROUP BY task_id
ORDER BY task_id
