-- Every table the lake's catalog has known, by id (the ids DuckLake's snapshot changes give).
SELECT DISTINCT table_id, table_name FROM {metadata}.ducklake_table
