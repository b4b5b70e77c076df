-- The active backend's api_template items in load order (item ids are time-ordered).
SELECT item_id
FROM docs
WHERE kind = 'api_template' AND backend = $backend
  AND NOT list_contains($exclude::VARCHAR[], item_id)
ORDER BY item_id
