-- Which memory items preceded first solves: per (campaign, item), the number of tasks whose
-- first correct attempt (within the budget) had the item in its context, and the number whose
-- attempts up to and including that first solve retrieved it at all.
-- Reads report_task_outcomes, report_item_labels.
-- Parameters: $campaign_ids VARCHAR[], $top_n INTEGER (items kept per campaign).
WITH first_solves AS (
    SELECT a.campaign_id, a.task_id, a.attempt_id, a.iteration
    FROM report_task_outcomes o
    JOIN attempts a
      ON a.campaign_id = o.campaign_id AND a.task_id = o.task_id
     AND a.iteration = o.first_correct_iteration AND a.correct
    WHERE list_contains($campaign_ids, a.campaign_id)
    QUALIFY row_number() OVER (PARTITION BY a.campaign_id, a.task_id ORDER BY a.attempt_id) = 1
),
context AS (
    SELECT f.campaign_id, f.task_id, r.item_id, a.attempt_id = f.attempt_id AS in_solving_attempt
    FROM first_solves f
    JOIN attempts a
      ON a.campaign_id = f.campaign_id AND a.task_id = f.task_id AND a.iteration <= f.iteration
    JOIN retrievals r ON r.attempt_id = a.attempt_id
),
per_item AS (
    SELECT campaign_id, item_id,
           count(DISTINCT task_id) FILTER (WHERE in_solving_attempt) AS n_solves_in_context,
           count(DISTINCT task_id) AS n_solves_preceded
    FROM context
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
