-- Every campaign id the lake knows: those with a campaigns row and those only seen in attempts
-- (an attempt whose campaign has no campaigns row is a data-quality failure, but still reported).
SELECT campaign_id FROM campaigns WHERE campaign_id IS NOT NULL
UNION
SELECT campaign_id FROM attempts WHERE campaign_id IS NOT NULL
ORDER BY campaign_id
