-- Raw refining rewards of a campaign in commit order: replayed to rebuild the normaliser on resume.
SELECT reward FROM attempts
WHERE campaign_id = $campaign_id AND stage = 2
ORDER BY created_at, attempt_id
