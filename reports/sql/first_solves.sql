-- The provenance of each first solve: per (campaign, task), the first correct attempt within the
-- budget and the memory items retrieved into its context and into the task's earlier attempts.
-- Reads report_solve_context (solve_context.sql), report_item_labels.
SELECT
    s.campaign_id,
    s.task_id,
    s.solve_iteration,
    s.solve_stage,
    s.solving_attempt_id,
    count(DISTINCT s.item_id) AS n_items_retrieved_before,
    coalesce(
        list(DISTINCT coalesce(l.title, s.item_id) ORDER BY coalesce(l.title, s.item_id))
            FILTER (WHERE s.in_solving_attempt),
        []
    ) AS items_in_solving_context
FROM report_solve_context s
LEFT JOIN report_item_labels l ON l.item_id = s.item_id
GROUP BY s.campaign_id, s.task_id, s.solve_iteration, s.solve_stage, s.solving_attempt_id
ORDER BY s.campaign_id, s.solve_iteration, s.task_id;
