-- The candidate pool: BM25 over the postings of the query terms (query_postings: registered by the
-- scorer, read from the postings or champions files; document frequencies are passed in, from the
-- scorer's per-file corpus statistics), plus feature matches on op category
-- and backend. kinds and excluded ids filter candidates, never the corpus statistics.
WITH query AS (
    SELECT unnest($terms::VARCHAR[]) AS term, unnest($dfs::BIGINT[]) AS df
),
scored AS (
    SELECT p.item_id,
           any_value(p.category) AS category,
           any_value(p.backend) AS backend,
           sum(ln(1 + ($n_docs - q.df + 0.5) / (q.df + 0.5))
               * p.tf * ($k1 + 1) / (p.tf + $k1 * (1 - $b + $b * p.doc_len / $avg_doc_len))) AS bm25
    FROM query_postings AS p
    JOIN query AS q ON p.term = q.term
    WHERE (len($kinds::VARCHAR[]) = 0 OR list_contains($kinds::VARCHAR[], p.kind))
      AND NOT list_contains($exclude::VARCHAR[], p.item_id)
    GROUP BY p.item_id
)
SELECT item_id,
       bm25
       + $w_category * coalesce((category = $category)::DOUBLE, 0)
       + $w_backend * coalesce((backend = $backend)::DOUBLE, 0) AS similarity
FROM scored
ORDER BY similarity DESC, item_id
LIMIT $k
