-- Champion lists, rebuilt at compaction from all postings of the current snapshot and the docs of
-- the same items: per (term, kind) the at most $k postings with the highest BM25 term weight
-- tf (k1 + 1) / (tf + k1 (1 - b + b doc_len / avg_doc_len)), ties by item_id. The term's idf is the
-- same for all its postings, so this is the order of their BM25 contribution.
WITH stats AS (
    SELECT greatest(coalesce(avg(doc_len), 1.0), 1.0) AS avg_doc_len FROM docs
)
SELECT p.term, p.item_id, p.tf, p.doc_len, p.kind, p.backend, p.category
FROM postings AS p, stats AS s
QUALIFY row_number() OVER (
    PARTITION BY p.term, p.kind
    ORDER BY p.tf * ($k1 + 1) / (p.tf + $k1 * (1 - $b + $b * p.doc_len / s.avg_doc_len)) DESC, p.item_id
) <= $k
ORDER BY p.term, p.item_id
