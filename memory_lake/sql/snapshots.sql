-- The lake's snapshots, oldest first: id, commit time and what each changed (DuckLake's own list).
SELECT snapshot_id, snapshot_time, changes::VARCHAR AS changes
FROM ducklake_snapshots('lake')
ORDER BY snapshot_id
