-- The lake's snapshots, oldest first: id, commit time and what each changed (DuckLake's own list:
-- as text, and as its map of change kind -> tables, by id for most kinds).
SELECT snapshot_id, snapshot_time, changes::VARCHAR AS changes, changes AS change_map
FROM ducklake_snapshots('lake')
ORDER BY snapshot_id
