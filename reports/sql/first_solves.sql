-- The provenance of each first solve: per (campaign, task), the first correct attempt within the
-- budget (first_correct_iteration of report_task_outcomes) and the memory items retrieved into its
-- context and into the task's earlier attempts. Reads report_task_outcomes, report_item_labels.
-- Parameters: $campaign_ids VARCHAR[].
WITH first_solves AS (
    SELECT a.campaign_id, a.task_id, a.attempt_id, a.iteration, a.stage
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
)
SELECT
    f.campaign_id,
    f.task_id,
    f.iteration AS solve_iteration,
    f.stage AS solve_stage,
    f.attempt_id AS solving_attempt_id,
    count(DISTINCT c.item_id) AS n_items_retrieved_before,
    coalesce(
        list(DISTINCT coalesce(l.title, c.item_id) ORDER BY coalesce(l.title, c.item_id))
            FILTER (WHERE c.in_solving_attempt),
        []
    ) AS items_in_solving_context
FROM first_solves f
LEFT JOIN context c USING (campaign_id, task_id)
LEFT JOIN report_item_labels l ON l.item_id = c.item_id
GROUP BY f.campaign_id, f.task_id, f.iteration, f.stage, f.attempt_id
ORDER BY f.campaign_id, f.iteration, f.task_id
