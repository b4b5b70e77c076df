-- Refinements that started from a given start point (its children in the task's trace tree).
SELECT item_id, kind, title, body, code, task_id, feasible, latency_ms, speedup, source_attempt_id
FROM items
WHERE parent_item_id = $parent_item_id AND kind = 'trace'
ORDER BY created_at DESC
LIMIT $limit
