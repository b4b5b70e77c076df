-- Snapshots committed after a given one and what each changed ("inserted_into_table:<id>", ...),
-- read from DuckLake's catalog table ({metadata}: the attached catalog database).
SELECT changes_made, snapshot_id
FROM {metadata}.ducklake_snapshot_changes
WHERE snapshot_id > $snapshot
