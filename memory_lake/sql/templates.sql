-- The active backend's api_template items in load order (item ids are time-ordered); the caller
-- caches this per docs file set and drops a request's excluded ids itself.
SELECT item_id
FROM docs
WHERE kind = 'api_template' AND backend = $backend
ORDER BY item_id
