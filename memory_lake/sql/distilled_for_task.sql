-- Items distilled from a task in a campaign (present = distillation already done).
SELECT item_id FROM items
WHERE campaign_id = $campaign_id AND task_id = $task_id AND kind IN ('experience', 'best_practice')
