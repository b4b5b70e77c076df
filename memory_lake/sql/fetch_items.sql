-- The displayed columns of the given items.
SELECT item_id, kind, title, body, code, task_id, created_at
FROM items
WHERE list_contains($item_ids::VARCHAR[], item_id)
