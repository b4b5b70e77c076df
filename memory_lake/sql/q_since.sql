-- Current Q of every (item, stage) updated after a given seq, and the last seq of each: a reader's
-- cache catches up with this (seq follows commit order, see values.py).
SELECT item_id, stage, arg_max(q_after, seq) AS q, max(seq) AS seq
FROM value_updates
WHERE seq > $seq
GROUP BY item_id, stage
