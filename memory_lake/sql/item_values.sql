-- Current Q per item and stage: the latest value_updates row (highest seq); items without an
-- update have the lake's q_init (from the one-row lake_meta view).
SELECT d.item_id,
       s.stage::TINYINT AS stage,
       coalesce(v.q, m.q_init) AS q,
       coalesce(v.n_updates, 0) AS n_updates
FROM docs AS d
CROSS JOIN (VALUES (1), (2)) AS s(stage)
CROSS JOIN lake_meta AS m
LEFT JOIN (
    SELECT item_id, stage, arg_max(q_after, seq) AS q, count(*) AS n_updates
    FROM value_updates
    GROUP BY item_id, stage
) AS v ON v.item_id = d.item_id AND v.stage = s.stage
