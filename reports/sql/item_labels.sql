-- One label per memory item (its latest row): title, kind and the task it came from.
SELECT
    item_id,
    last(title ORDER BY created_at NULLS FIRST) AS title,
    last(kind ORDER BY created_at NULLS FIRST) AS kind,
    last(task_id ORDER BY created_at NULLS FIRST) AS origin_task_id
FROM items
GROUP BY item_id
