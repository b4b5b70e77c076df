-- Rows per lake table (the inventory the report starts from).
SELECT 'items' AS table_name, count(*) AS n_rows FROM items
UNION ALL SELECT 'attempts', count(*) FROM attempts
UNION ALL SELECT 'retrievals', count(*) FROM retrievals
UNION ALL SELECT 'value_updates', count(*) FROM value_updates
UNION ALL SELECT 'campaigns', count(*) FROM campaigns
UNION ALL SELECT 'llm_calls', count(*) FROM llm_calls
