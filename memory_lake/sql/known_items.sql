-- Which of the given item ids exist in the lake.
SELECT DISTINCT item_id FROM docs WHERE list_contains($item_ids::VARCHAR[], item_id)
