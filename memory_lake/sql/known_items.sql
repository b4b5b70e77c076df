-- Which of the given item ids exist in the lake.
SELECT DISTINCT d.item_id
FROM docs AS d
JOIN (SELECT unnest($item_ids::VARCHAR[]) AS item_id) AS wanted USING (item_id)
