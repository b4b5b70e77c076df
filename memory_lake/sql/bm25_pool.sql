-- The candidate pool: BM25 over the postings of the query terms (query_postings: registered by the
-- scorer, read from the postings or champions files; document frequencies are passed in, from the
-- scorer's per-file corpus statistics), plus feature matches on op category
-- and backend. kinds and excluded ids filter candidates, never the corpus statistics.
WITH query AS (  -- idf once per query term, in DOUBLE (not per posting row, not in DECIMAL)
    SELECT term, ln(1.0 + ($n_docs::DOUBLE - df + 0.5) / (df + 0.5)) AS idf
    FROM (SELECT unnest($terms::VARCHAR[]) AS term, unnest($dfs::BIGINT[])::DOUBLE AS df)
),
scored AS (
    SELECT p.item_id,
           max(coalesce((p.category = $category)::DOUBLE, 0)) AS category_match,
           max(coalesce((p.backend = $backend)::DOUBLE, 0)) AS backend_match,
           sum(q.idf * p.tf * ($k1::DOUBLE + 1.0)
               / (p.tf + $k1::DOUBLE * (1.0 - $b::DOUBLE + $b::DOUBLE * p.doc_len / $avg_doc_len::DOUBLE))) AS bm25
    FROM query_postings AS p
    JOIN query AS q ON p.term = q.term
    WHERE (len($kinds::VARCHAR[]) = 0 OR list_contains($kinds::VARCHAR[], p.kind))
      AND NOT list_contains($exclude::VARCHAR[], p.item_id)
    GROUP BY p.item_id
)
SELECT item_id,
       bm25 + $w_category * category_match + $w_backend * backend_match AS similarity
FROM scored
ORDER BY similarity DESC, item_id
LIMIT $k
