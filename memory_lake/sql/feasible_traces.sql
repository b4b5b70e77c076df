-- A task's feasible kernels in the lake (any campaign), oldest first, with the verdict's feedback.
SELECT i.item_id, i.code, i.latency_ms, i.speedup, i.body AS feedback,
       coalesce(a.iteration, 0) AS iteration
FROM items AS i
LEFT JOIN attempts AS a ON a.attempt_id = i.source_attempt_id
WHERE i.kind = 'trace' AND i.task_id = $task_id AND i.feasible AND i.code IS NOT NULL
ORDER BY i.created_at, i.item_id;
