-- Latest Q of the given items for one stage (items without updates are absent: caller uses q_init).
SELECT item_id, arg_max(q_after, seq) AS q
FROM value_updates
WHERE stage = $stage AND list_contains($item_ids::VARCHAR[], item_id)
GROUP BY item_id
