-- One row per campaign in scope: its latest campaigns row (the current state) and attempt counts.
-- Parameters: $campaign_ids VARCHAR[].
WITH latest AS (
    SELECT *
    FROM campaigns
    WHERE list_contains($campaign_ids, campaign_id)
    QUALIFY row_number() OVER (PARTITION BY campaign_id ORDER BY recorded_at DESC NULLS LAST) = 1
),
counted AS (
    SELECT campaign_id, count(*) AS n_attempts, count(DISTINCT task_id) AS n_tasks
    FROM attempts
    WHERE list_contains($campaign_ids, campaign_id)
    GROUP BY campaign_id
),
scope AS (SELECT unnest($campaign_ids) AS campaign_id)
SELECT
    s.campaign_id,
    l.campaign_id IS NOT NULL AS has_campaign_row,
    l.method,
    l.model,
    l.backend,
    l.build_hash,
    l.status,
    TRY_CAST(json_extract_string(l.settings_json, '$.budget') AS INTEGER) AS budget,
    l.started_at,
    l.finished_at,
    coalesce(c.n_attempts, 0) AS n_attempts,
    coalesce(c.n_tasks, 0) AS n_tasks
FROM scope s
LEFT JOIN latest l USING (campaign_id)
LEFT JOIN counted c USING (campaign_id)
ORDER BY s.campaign_id
