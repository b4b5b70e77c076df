-- Items to export with their current Q per stage; test tasks and unwanted kinds filtered out.
SELECT i.*,
       v1.q AS q1, v1.n_updates AS n_updates_1,
       v2.q AS q2, v2.n_updates AS n_updates_2
FROM items AS i
JOIN item_values AS v1 ON v1.item_id = i.item_id AND v1.stage = 1
JOIN item_values AS v2 ON v2.item_id = i.item_id AND v2.stage = 2
WHERE (len($kinds::VARCHAR[]) = 0 OR list_contains($kinds::VARCHAR[], i.kind))
  AND (i.task_id IS NULL OR NOT list_contains($exclude_tasks::VARCHAR[], i.task_id))
ORDER BY i.item_id
