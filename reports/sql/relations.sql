-- Names of the tables and views visible on the connection (which lake tables are present).
SELECT table_name AS name FROM information_schema.tables
UNION
SELECT view_name FROM duckdb_views() WHERE NOT internal
