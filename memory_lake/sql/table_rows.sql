-- Rows per item kind (lake stats).
SELECT kind, count(*) AS n FROM items GROUP BY kind ORDER BY kind
