-- Retrievals of the attempts in scope, and whether the retrieval's attempt and item exist.
-- Parameters: $campaign_ids VARCHAR[].
WITH scoped AS (
    SELECT attempt_id FROM attempts WHERE list_contains($campaign_ids, campaign_id)
),
known_items AS (SELECT DISTINCT item_id FROM items)
SELECT r.attempt_id, r.item_id, r.stage, r.rank, k.item_id IS NOT NULL AS item_known
FROM retrievals r
JOIN scoped USING (attempt_id)
LEFT JOIN known_items k ON k.item_id = r.item_id
