-- Q-value trajectories of the most retrieved items per stage: for the $top_n items retrieved most
-- often (per stage) in the campaigns' attempts, every value update of that stage in those
-- campaigns, in seq order (update_index 1, 2, ...; the current Q is the last q_after).
-- Reads report_item_labels. Parameters: $campaign_ids VARCHAR[], $top_n INTEGER.
WITH scoped_attempts AS (
    SELECT attempt_id FROM attempts WHERE list_contains($campaign_ids, campaign_id)
),
counts AS (
    SELECT r.item_id, r.stage, count(*) AS n_retrievals
    FROM retrievals r
    JOIN scoped_attempts USING (attempt_id)
    GROUP BY r.item_id, r.stage
),
top_items AS (
    SELECT *
    FROM counts
    QUALIFY row_number() OVER (PARTITION BY stage ORDER BY n_retrievals DESC, item_id) <= $top_n
)
SELECT
    t.stage,
    t.item_id,
    coalesce(l.title, t.item_id) AS title,
    l.kind,
    t.n_retrievals,
    v.seq,
    row_number() OVER (PARTITION BY t.stage, t.item_id ORDER BY v.seq) AS update_index,
    v.q_before,
    v.q_after,
    v.reward,
    v.campaign_id
FROM top_items t
JOIN value_updates v
  ON v.item_id = t.item_id AND v.stage = t.stage AND list_contains($campaign_ids, v.campaign_id)
LEFT JOIN report_item_labels l ON l.item_id = t.item_id
ORDER BY t.stage, t.n_retrievals DESC, t.item_id, v.seq
