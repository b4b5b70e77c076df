-- A task's distillation calls in a campaign, with what each stored (items_stored null: a row written
-- before the column, read as stored nothing unless the task has distilled items: distilled_for_task).
SELECT call_id, items_stored, created_at FROM llm_calls
WHERE campaign_id = $campaign_id AND task_id = $task_id AND purpose = 'distill'
ORDER BY created_at
