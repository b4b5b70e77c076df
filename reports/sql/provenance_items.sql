-- Which memory items preceded first solves: per (campaign, item), the number of tasks whose
-- first correct attempt (within the budget) had the item in its context, and the number whose
-- attempts up to and including that first solve retrieved it at all.
-- Reads report_solve_context (solve_context.sql), report_item_labels.
-- Parameters: $top_n INTEGER (items kept per campaign).
WITH per_item AS (
    SELECT campaign_id, item_id,
           count(DISTINCT task_id) FILTER (WHERE in_solving_attempt) AS n_solves_in_context,
           count(DISTINCT task_id) AS n_solves_preceded
    FROM report_solve_context
    WHERE item_id IS NOT NULL
    GROUP BY campaign_id, item_id
)
SELECT p.campaign_id, p.item_id, coalesce(l.title, p.item_id) AS title, l.kind, l.origin_task_id,
       p.n_solves_in_context, p.n_solves_preceded
FROM per_item p
LEFT JOIN report_item_labels l USING (item_id)
QUALIFY row_number() OVER (
    PARTITION BY p.campaign_id ORDER BY p.n_solves_in_context DESC, p.n_solves_preceded DESC, p.item_id
) <= $top_n
ORDER BY p.campaign_id, p.n_solves_in_context DESC, p.n_solves_preceded DESC, p.item_id
