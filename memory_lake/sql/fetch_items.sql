-- The displayed columns of the given items (a join on the id list lets DuckDB prune row groups).
SELECT i.item_id, i.kind, i.title, i.body, i.code, i.task_id, i.created_at
FROM items AS i
JOIN (SELECT unnest($item_ids::VARCHAR[]) AS item_id) AS wanted USING (item_id)
