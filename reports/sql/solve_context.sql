-- Each first solve and the memory items behind it: per (campaign, task), the first correct attempt
-- within the budget (first_correct_iteration of report_task_outcomes), and every item retrieved into
-- its context or into the task's earlier attempts. One row per (solve, item); a solve with no
-- retrieved items has one row with item_id NULL. Registered as report_solve_context for
-- first_solves.sql and provenance_items.sql. Reads report_task_outcomes.
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
SELECT f.campaign_id, f.task_id, f.attempt_id AS solving_attempt_id, f.iteration AS solve_iteration,
       f.stage AS solve_stage, c.item_id, coalesce(c.in_solving_attempt, false) AS in_solving_attempt
FROM first_solves f
LEFT JOIN context c USING (campaign_id, task_id);
