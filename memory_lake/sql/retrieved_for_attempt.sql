-- Items already retrieved for an attempt (a resumed step reuses them instead of retrieving twice).
SELECT r.item_id, i.kind, i.title, i.body, i.code, i.task_id, r.rank, r.similarity, r.q_value,
       r.explored, r.strategy, i.feasible, i.source_attempt_id
FROM retrievals AS r
JOIN items AS i USING (item_id)
WHERE r.attempt_id = $attempt_id
ORDER BY r.rank
