-- The last sequence number of value updates (0 for a lake without updates).
SELECT coalesce(max(seq), 0) AS seq FROM value_updates
