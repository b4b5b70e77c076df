-- Value updates of the campaigns in scope (the Q trajectories' source rows).
-- Parameters: $campaign_ids VARCHAR[].
SELECT item_id, stage, attempt_id, campaign_id, q_before, q_after, alpha, seq,
       isfinite(q_after) AS q_after_finite
FROM value_updates
WHERE list_contains($campaign_ids, campaign_id)
