-- The best feasible kernel's speedup over the PyTorch reference per solved task, as counted in the
-- headline figures (a noisy timing at its CI's low end; task_outcomes.sql), with the measured median
-- and the verifier's 95% CI: the points behind the speedup distribution plot.
-- Reads report_task_outcomes (task_outcomes.sql).
SELECT campaign_id, task_id, level, category, best_speedup, best_measured_speedup, best_ci_low, best_ci_high,
       best_flagged, best_timing_flag,
       draft_speedup, draft_speedup_ci_low, draft_speedup_ci_high
FROM report_task_outcomes
WHERE best_speedup IS NOT NULL
ORDER BY campaign_id, best_speedup DESC, task_id
