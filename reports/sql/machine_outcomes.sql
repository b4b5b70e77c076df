-- The machine's outcomes per campaign and task, counted apart (evokernel/agent/attribution.py): attempts
-- whose verification failed for the machine's reasons (attempts.outcome_owner = 'machine'), never
-- rewarded; machine_reason is the verifier's reason (its first line). Parameters: $campaign_ids VARCHAR[].
SELECT campaign_id, task_id, machine_reason, count(*) AS n_machine_outcomes
FROM attempts
WHERE list_contains($campaign_ids, campaign_id) AND outcome_owner = 'machine'
GROUP BY campaign_id, task_id, machine_reason
ORDER BY campaign_id, task_id, machine_reason
