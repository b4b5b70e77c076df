-- Campaign ids that have a campaigns row.
SELECT DISTINCT campaign_id FROM campaigns WHERE campaign_id IS NOT NULL ORDER BY campaign_id
