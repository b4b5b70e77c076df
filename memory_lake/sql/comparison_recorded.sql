-- Whether a campaign's task already has its within-task comparison (evokernel.agent.gain: once per task).
SELECT 1 FROM comparisons WHERE campaign_id = $campaign_id AND task_id = $task_id LIMIT 1
