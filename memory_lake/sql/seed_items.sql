-- The lake's api_template items (the backend's seed knowledge) with what identifies their content,
-- and whether each already has Q history per stage (import maps an export's copy of a seed onto them).
SELECT i.item_id, i.backend, i.title, i.body, i.code,
       coalesce(max(v.n_updates) FILTER (WHERE v.stage = 1), 0) AS n_updates_1,
       coalesce(max(v.n_updates) FILTER (WHERE v.stage = 2), 0) AS n_updates_2
FROM items AS i
LEFT JOIN item_values AS v USING (item_id)
WHERE i.kind = 'api_template'
GROUP BY ALL
ORDER BY i.item_id
