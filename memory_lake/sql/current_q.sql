-- Latest Q of the given items for one stage (items without updates are absent: caller uses q_init).
SELECT v.item_id, arg_max(v.q_after, v.seq) AS q
FROM value_updates AS v
JOIN (SELECT unnest($item_ids::VARCHAR[]) AS item_id) AS wanted USING (item_id)
WHERE v.stage = $stage
GROUP BY v.item_id
