-- The best feasible kernel's speedup over the PyTorch reference per solved task, with the
-- verifier's 95% CI: the points behind the speedup distribution plot.
-- Reads report_task_outcomes (task_outcomes.sql).
SELECT campaign_id, task_id, level, category, best_speedup, best_ci_low, best_ci_high, best_flagged,
       draft_speedup, draft_speedup_ci_low, draft_speedup_ci_high
FROM report_task_outcomes
WHERE best_speedup IS NOT NULL
ORDER BY campaign_id, best_speedup DESC, task_id
