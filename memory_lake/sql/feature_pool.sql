-- Fallback candidates when the text matches too few items: same op category or backend.
SELECT item_id,
       $w_category * coalesce((category = $category)::DOUBLE, 0)
       + $w_backend * coalesce((backend = $backend)::DOUBLE, 0) AS similarity
FROM docs
WHERE (category = $category OR backend = $backend)
  AND (len($kinds::VARCHAR[]) = 0 OR list_contains($kinds::VARCHAR[], kind))
  AND NOT list_contains($exclude::VARCHAR[], item_id)
ORDER BY similarity DESC, item_id
LIMIT $k
