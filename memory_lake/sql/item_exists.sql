-- Whether an item id is already stored (idempotent writes of deterministic ids).
SELECT 1 AS present FROM items WHERE item_id = $item_id LIMIT 1
