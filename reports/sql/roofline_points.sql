-- The roofline position of each solved task's best feasible kernel (report_task_outcomes'
-- best_attempt_id) and of its PyTorch reference: bytes moved and FLOPs of one call (counted on the
-- reference) over the measured time, against the machine's measured peaks recorded with the attempt.
-- reference_gflops is the same FLOPs over the reference's time in the same verification.
-- Tasks whose best kernel has no roofline position (no probed peaks, or a lake from before them)
-- are left out. Reads report_task_outcomes (task_outcomes.sql).
SELECT o.campaign_id, o.task_id, o.level, o.category,
       a.bytes_moved, a.flops,
       a.flops / a.bytes_moved AS intensity,
       a.achieved_gflops, a.achieved_gbs,
       a.flops / (a.reference_ms * 1e6) AS reference_gflops,
       a.roof_gbs, a.memory_gbs, a.peak_gflops, a.roof_fraction, a.roof_bound, a.speedup
FROM report_task_outcomes o
JOIN attempts a ON a.attempt_id = o.best_attempt_id
WHERE a.roof_fraction IS NOT NULL AND a.bytes_moved > 0 AND a.flops > 0 AND a.reference_ms > 0
ORDER BY o.campaign_id, o.task_id
