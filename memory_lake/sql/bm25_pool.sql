-- The candidate pool: BM25 over the postings of the query terms, plus feature matches on op
-- category and backend; kinds and excluded ids filter candidates (not the corpus statistics).
WITH hits AS (
    SELECT term, item_id, tf, doc_len, kind, backend, category
    FROM postings
    WHERE list_contains($terms::VARCHAR[], term)
),
df AS (
    SELECT term, count(*) AS df FROM hits GROUP BY term
),
scored AS (
    SELECT h.item_id,
           any_value(h.category) AS category,
           any_value(h.backend) AS backend,
           sum(ln(1 + ($n_docs - df.df + 0.5) / (df.df + 0.5))
               * h.tf * ($k1 + 1) / (h.tf + $k1 * (1 - $b + $b * h.doc_len / $avg_doc_len))) AS bm25
    FROM hits AS h JOIN df USING (term)
    WHERE (len($kinds::VARCHAR[]) = 0 OR list_contains($kinds::VARCHAR[], h.kind))
      AND NOT list_contains($exclude::VARCHAR[], h.item_id)
    GROUP BY h.item_id
)
SELECT item_id,
       bm25
       + $w_category * coalesce((category = $category)::DOUBLE, 0)
       + $w_backend * coalesce((backend = $backend)::DOUBLE, 0) AS similarity
FROM scored
ORDER BY similarity DESC, item_id
LIMIT $k
