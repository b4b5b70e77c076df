-- The latest recorded row of a campaign (campaign rows are append-only; the newest wins).
SELECT campaign_id, build_hash, backend, model, method, settings_json, status, started_at, finished_at, status_reason
FROM campaigns
WHERE campaign_id = $campaign_id
ORDER BY recorded_at DESC
LIMIT 1
