-- The best feasible kernel's speedup over the PyTorch reference per solved task (the one definition of
-- best: memory_lake best_kernels.sql): the median over rounds with the verifier's 95% CI, and its speedup
-- over the first feasible draft (measured in one paired verification where draft_speedup_source is
-- 'paired'; see task_outcomes.sql): the points behind the speedup distribution plot.
-- Reads report_task_outcomes (task_outcomes.sql).
SELECT campaign_id, task_id, level, category, best_speedup, best_ci_low, best_ci_high,
       best_flagged, best_timing_flag,
       draft_speedup, draft_speedup_ci_low, draft_speedup_ci_high, draft_speedup_source
FROM report_task_outcomes
WHERE best_speedup IS NOT NULL
ORDER BY campaign_id, best_speedup DESC, task_id
