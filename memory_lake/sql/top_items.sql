-- The items with the highest current Q for one stage (lake stats).
SELECT v.item_id, i.kind, i.title, v.q, v.n_updates
FROM item_values AS v JOIN items AS i USING (item_id)
WHERE v.stage = $stage AND v.n_updates > 0
ORDER BY v.q DESC, v.item_id
LIMIT $limit
